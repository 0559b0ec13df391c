package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/modelgate/modelgate/modellist"
)

func TestSecretsCaddyfile(t *testing.T) {
	g := new(Gateway)
	d := caddyfile.NewTestDispenser(`llm_gateway {
		models /m.yaml
		secrets {
			action block
			alias local log
		}
	}`)
	if err := g.UnmarshalCaddyfile(d); err != nil {
		t.Fatal(err)
	}
	if g.Secrets == nil || g.Secrets.Action != "block" || g.Secrets.Aliases["local"] != "log" {
		t.Fatalf("secrets %+v", g.Secrets)
	}
	cfg, _, err := modellist.Parse([]byte(`model_list:
  - model_name: local
    proxy_params: {model: ollama/llama3.1, api_base: "http://127.0.0.1:11434"}
  - model_name: cloud
    proxy_params: {model: openai/gpt-4o, api_key: sk-x}
  - model_name: own
    proxy_params: {model: openai/gpt-4o, api_key: sk-x}
    secrets: {action: redact}
`), "m.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Secrets.validate(cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]modellist.SecretsAction{"local": modellist.SecretsLog, "cloud": modellist.SecretsBlock, "own": modellist.SecretsRedact}
	for _, dep := range cfg.Deployments {
		if got := g.Secrets.actionFor(dep.Alias, dep); got != want[dep.Alias] {
			t.Errorf("%s: %s, want %s", dep.Alias, got, want[dep.Alias])
		}
	}
	for src, msg := range map[string]string{
		"llm_gateway {\n\tsecrets {\n\t\taction scrub\n\t}\n}": `secrets: unknown action "scrub"; use redact, block, log, off`,
		"llm_gateway {\n\tsecrets {\n\t\talias only\n\t}\n}":   "secrets: alias takes a model_name and an action",
		"llm_gateway {\n\tsecrets {\n\t\trules off\n\t}\n}":    `unrecognized secrets option "rules" (known: action, alias)`,
		"llm_gateway {\n\tsecrets redact\n}":                   `secrets takes a block, not "redact"`,
	} {
		err := new(Gateway).UnmarshalCaddyfile(caddyfile.NewTestDispenser(src))
		if err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v, want %q", src, err, msg)
		}
	}
	bad := &Secrets{Aliases: map[string]string{"nope": "block"}}
	if err := bad.validate(cfg); err == nil || !strings.Contains(err.Error(), `the models file has no model_name "nope"`) {
		t.Fatalf("unknown alias: %v", err)
	}
}
