package modellist

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// envOf builds an injected getenv from name/value pairs.
func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// one wraps a single entry's proxy_params (flow style) into a file.
func one(params string) string {
	return "model_list:\n  - model_name: m\n    proxy_params: " + params + "\n"
}

func mustParse(t *testing.T, src string, getenv func(string) (string, bool)) (*Config, []string) {
	t.Helper()
	c, warns, err := Parse([]byte(src), "models.yaml", getenv)
	if err != nil {
		t.Fatalf("Parse: unexpected error:\n%v", err)
	}
	return c, warns
}

// TestRuleErrors has one row per rule; every message must name the entry,
// the field and the fix.
func TestRuleErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  []string
		want []string // substrings of the error, in any order
	}{
		{"empty file", "", nil, []string{"models.yaml: the file is empty"}},
		{"comment-only file", "# nothing\n", nil, []string{"the file is empty"}},
		{"model_list missing", "router_settings: {num_retries: 1}\n", nil, []string{"model_list is missing; add model_list:"}},
		{"model_list empty list", "model_list: []\n", nil, []string{"models.yaml:1: model_list: is empty; add at least one entry"}},
		{"model_list null", "model_list:\n", nil, []string{"model_list: is empty"}},
		{"model_list not a list", "model_list: {a: b}\n", nil, []string{"model_list: must be a list of entries"}},
		{"top level not a mapping", "- a\n- b\n", nil, []string{"must be a mapping"}},
		{"unknown top-level field", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\ngeneral_settings: {}\n", nil,
			[]string{`models.yaml:2: unknown field "general_settings"`, "known: model_list, router_settings, model_aliases"}},
		{"entry not a mapping", "model_list: [just-a-string]\n", nil, []string{"model_list[0]: must be a mapping"}},
		{"model_name required", "model_list: [{proxy_params: {model: echo/x}}]\n", nil,
			[]string{"model_list[0]: model_name: required", "add model_name: <alias>"}},
		{"model_name empty", "model_list: [{model_name: '', proxy_params: {model: echo/x}}]\n", nil, []string{"model_name: must not be empty"}},
		{"model_name surrounding spaces", "model_list: [{model_name: ' m', proxy_params: {model: echo/x}}]\n", nil, []string{"model_name: must not be empty or start or end with spaces"}},
		{"proxy_params required", "model_list: [{model_name: m}]\n", nil,
			[]string{`model_list[0] (model_name "m"): proxy_params: required; add proxy_params:`}},
		{"proxy_params not a mapping", "model_list: [{model_name: m, proxy_params: ollama/x}]\n", nil, []string{"proxy_params: must be a mapping"}},
		{"model required", one("{api_base: 'http://h:1'}"), nil,
			[]string{`model_list[0] (model_name "m"): proxy_params.model: required: <provider>/<model>`, "providers: anthropic, bedrock, deepseek, echo"}},
		{"model without prefix", one("{model: gpt-4o}"), nil,
			[]string{`proxy_params.model: "gpt-4o" has no provider prefix; write <provider>/gpt-4o`}},
		{"unknown prefix lists known ones", one("{model: azure/gpt-4o}"), nil,
			[]string{`proxy_params.model: unknown provider prefix "azure"`, "(known: " + knownList() + ")"}},
		{"prefix typo suggests", one("{model: olama/llama3}"), nil, []string{`did you mean "ollama"?`}},
		{"uppercase prefix", one("{model: OpenAI/gpt-4o, api_key: k}"), nil, []string{"prefixes are lowercase: openai/"}},
		{"model missing after prefix", one("{model: ollama/, api_base: 'http://h:1'}"), nil, []string{`no model after "ollama/"`}},
		{"os.environ in model", one("{model: os.environ/MODEL}"), nil, []string{"os.environ/ is resolved only in api_key, api_base, extra_headers and the aws_ and vertex_ fields"}},
		{"ollama needs api_base", one("{model: ollama/llama3.1}"), nil,
			[]string{"proxy_params.api_base: required for ollama/", "api_base: http://localhost:11434"}},
		{"ollama_chat needs api_base", one("{model: ollama_chat/llama3.1}"), nil, []string{"proxy_params.api_base: required for ollama_chat/"}},
		{"hosted_vllm needs api_base", one("{model: hosted_vllm/qwen, api_key: none}"), nil, []string{"api_base: required for hosted_vllm/"}},
		{"lm_studio needs api_base", one("{model: lm_studio/qwen, api_key: none}"), nil, []string{"api_base: required for lm_studio/"}},
		{"llamacpp needs api_base", one("{model: llamacpp/qwen, api_key: none}"), nil, []string{"api_base: required for llamacpp/"}},
		{"openai with api_base needs api_key", "model_list:\n  - model_name: a\n    proxy_params: {model: echo/a}\n  - model_name: b\n    proxy_params: {model: echo/b}\n  - model_name: coder\n    proxy_params:\n      model: openai/qwen2.5-coder\n      api_base: http://localhost:1234/v1\n", nil,
			[]string{`models.yaml:7: model_list[2] (model_name "coder"): proxy_params.api_key: required for a chat-completions-compatible server at api_base; set any value, e.g. api_key: none`}},
		{"openai with api_base empty api_key", one("{model: openai/q, api_base: 'http://h:1/v1', api_key: ''}"), nil,
			[]string{"proxy_params.api_key: required for a chat-completions-compatible server at api_base"}},
		{"openai with api_base null api_key", one("{model: openai/q, api_base: 'http://h:1/v1', api_key: }"), nil,
			[]string{"proxy_params.api_key: required for a chat-completions-compatible server at api_base"}},
		{"hosted_vllm needs api_key", one("{model: hosted_vllm/q, api_base: 'http://h:8000/v1'}"), nil, []string{"api_key: required for a chat-completions-compatible server"}},
		{"lm_studio needs api_key", one("{model: lm_studio/q, api_base: 'http://h:1234/v1'}"), nil, []string{"api_key: required for a chat-completions-compatible server"}},
		{"llamacpp needs api_key", one("{model: llamacpp/q, api_base: 'http://h:8080/v1'}"), nil, []string{"api_key: required for a chat-completions-compatible server"}},
		{"openai cloud needs a key", one("{model: openai/gpt-4o}"), nil,
			[]string{"proxy_params.api_key: required: openai/ is a cloud API and needs a real key; set api_key: os.environ/OPENAI_API_KEY"}},
		{"anthropic needs a key", one("{model: anthropic/claude-sonnet-4-5}"), nil,
			[]string{"api_key: required: anthropic/ is a cloud API", "os.environ/ANTHROPIC_API_KEY"}},
		{"cloud with overridden api_base still needs a key", one("{model: groq/llama, api_base: 'https://proxy.example/openai/v1'}"), nil,
			[]string{"api_key: required: groq/ is a cloud API"}},
		{"env var unset", one("{model: anthropic/c, api_key: os.environ/ANTHROPIC_API_KEY}"), nil,
			[]string{`model_list[0] (model_name "m"): proxy_params.api_key: environment variable ANTHROPIC_API_KEY is unset or empty; export it`}},
		{"env var empty", one("{model: anthropic/c, api_key: os.environ/ANTHROPIC_API_KEY}"), []string{"ANTHROPIC_API_KEY", ""},
			[]string{"environment variable ANTHROPIC_API_KEY is unset or empty"}},
		{"env var in api_base unset", one("{model: ollama/x, api_base: os.environ/OLLAMA_HOST}"), nil,
			[]string{"proxy_params.api_base: environment variable OLLAMA_HOST is unset or empty"}},
		{"env reference without a name", one("{model: anthropic/c, api_key: os.environ/}"), nil,
			[]string{"api_key: os.environ/ needs a variable name"}},
		{"api_key with trailing newline", one("{model: anthropic/c, api_key: os.environ/K}"), []string{"K", "sk-ant-123\n"},
			[]string{"api_key: has leading or trailing whitespace"}},
		{"unknown field in proxy_params", one("{model: ollama/x, api_bsae: 'http://h:1'}"), nil,
			[]string{`model_list[0] (model_name "m"): proxy_params: unknown field "api_bsae"; did you mean "api_base"? (known: model, api_base, api_key, timeout,`}},
		{"unknown field in entry", "model_list: [{model_name: m, litellm_params: {model: echo/x}}]\n", nil,
			[]string{`unknown field "litellm_params"`, "(known: model_name, proxy_params, model_info, secrets)"}},
		{"unknown field in model_info", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {mode: chat}}]\n", nil,
			[]string{`model_info: unknown field "mode"`}},
		{"unknown field in router_settings", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {retries: 2}\n", nil,
			[]string{`router_settings: unknown field "retries"`}},
		{"field given twice", "model_list:\n  - model_name: m\n    proxy_params:\n      model: echo/x\n      model: echo/y\n", nil,
			[]string{`models.yaml:5: model_list[0] (model_name "m"): proxy_params: field "model" given twice (first on line 4)`}},
		{"echo takes no api_base", one("{model: echo/x, api_base: 'http://h:1'}"), nil, []string{"api_base: echo/ is built in and takes no api_base; remove it"}},
		{"echo takes no api_key", one("{model: echo/x, api_key: k}"), nil, []string{"api_key: echo/ is built in and takes no api_key; remove it"}},
		{"api_base not a URL", one("{model: ollama/x, api_base: 'localhost:11434'}"), nil,
			[]string{"api_base: must be an http:// or https:// URL with a host, e.g. http://localhost:11434"}},
		{"api_base with credentials", one("{model: ollama/x, api_base: 'http://u:pw@h:1'}"), nil, []string{"api_base: must not contain credentials"}},
		{"api_base with query", one("{model: ollama/x, api_base: 'http://h:1/?a=b'}"), nil, []string{"api_base: must not have a query or fragment"}},
		{"timeout garbage", one("{model: echo/x, timeout: soon}"), nil, []string{`proxy_params.timeout: must be seconds (30) or a Go duration ("30s", "1m30s")`}},
		{"timeout negative", one("{model: echo/x, timeout: -5}"), nil, []string{"proxy_params.timeout: must not be negative"}},
		{"timeout zero", one("{model: echo/x, timeout: 0}"), nil, []string{"proxy_params.timeout: must be more than 0; remove the field"}},
		{"stream_timeout garbage", one("{model: echo/x, stream_timeout: .inf}"), nil, []string{"proxy_params.stream_timeout: must be seconds"}},
		{"max_retries fraction", one("{model: echo/x, max_retries: 1.5}"), nil, []string{"proxy_params.max_retries: must be a whole number"}},
		{"max_retries negative", one("{model: echo/x, max_retries: -1}"), nil, []string{"proxy_params.max_retries: must be 0 or more"}},
		{"rpm negative", one("{model: echo/x, rpm: -10}"), nil, []string{"proxy_params.rpm: must be 0 or more"}},
		{"tpm not a number", one("{model: echo/x, tpm: lots}"), nil, []string{"proxy_params.tpm: must be a whole number"}},
		{"weight zero", one("{model: echo/x, weight: 0}"), nil, []string{"proxy_params.weight: must be a number above 0"}},
		{"weight negative", one("{model: echo/x, weight: -1}"), nil, []string{"proxy_params.weight: must be a number above 0"}},
		{"extra_headers not a mapping", one("{model: echo/x, extra_headers: [a]}"), nil, []string{"proxy_params.extra_headers: must be a mapping"}},
		{"extra_headers bad name", one("{model: echo/x, extra_headers: {'X Team': a}}"), nil, []string{"extra_headers: header names must be plain tokens"}},
		{"extra_headers set by gateway", one("{model: echo/x, extra_headers: {host: a}}"), nil, []string{"extra_headers.host: is set by the gateway"}},
		{"extra_headers twice", one("{model: echo/x, extra_headers: {X-A: a, x-a: b}}"), nil, []string{"extra_headers.x-a: given twice"}},
		{"extra_headers env unset", one("{model: echo/x, extra_headers: {X-Token: os.environ/TOK}}"), nil,
			[]string{"proxy_params.extra_headers.X-Token: environment variable TOK is unset or empty"}},
		{"price negative", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {input_cost_per_token: -0.000001}}]\n", nil,
			[]string{`model_list[0] (model_name "m"): model_info.input_cost_per_token: must not be negative`}},
		{"price finer than a picodollar", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {output_cost_per_token: 1.5e-13}}]\n", nil,
			[]string{"model_info.output_cost_per_token: is finer than 1 picodollar"}},
		{"price per million in the per-token field", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {input_cost_per_token: 3}}]\n", nil,
			[]string{"model_info.input_cost_per_token: 3 USD per token is above $0.001; prices are per token, not per million tokens"}},
		{"price garbage", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {cache_read_input_token_cost: cheap}}]\n", nil,
			[]string{"model_info.cache_read_input_token_cost: must be a price in USD per token"}},
		{"max_input_tokens negative", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {max_input_tokens: -1}}]\n", nil,
			[]string{"model_info.max_input_tokens: must be 0 or more"}},
		{"max_output_tokens negative", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {max_output_tokens: -1}}]\n", nil,
			[]string{`models.yaml:1: model_list[0] (model_name "m"): model_info.max_output_tokens: must be 0 or more`}},
		{"max_output_tokens past int32", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {max_output_tokens: 4294967296}}]\n", nil,
			[]string{"model_info.max_output_tokens: is too large; the most is 2147483647"}},
		{"max_output_tokens not a number", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {max_output_tokens: lots}}]\n", nil,
			[]string{"model_info.max_output_tokens: must be a whole number"}},
		{"supports_reasoning not a switch", "model_list: [{model_name: m, proxy_params: {model: echo/x}, model_info: {supports_reasoning: sometimes}}]\n", nil,
			[]string{`model_info.supports_reasoning: "sometimes" is not a choice: true or false`}},
		{"routing_strategy unknown", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {routing_strategy: usage-based-routing}\n", nil,
			[]string{`router_settings.routing_strategy: "usage-based-routing" is not supported; use one of simple-shuffle, least-busy, latency-based-routing`}},
		{"session_affinity not a switch", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {session_affinity: sometimes}\n", nil,
			[]string{`router_settings.session_affinity: "sometimes" is not a choice: true`}},
		{"num_retries negative", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {num_retries: -1}\n", nil,
			[]string{"router_settings.num_retries: must be 0 or more"}},
		{"cooldown_time garbage", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {cooldown_time: a while}\n", nil,
			[]string{"router_settings.cooldown_time: must be seconds"}},
		{"fallback primary unknown", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings:\n  fallbacks:\n    - claude: [m]\n", nil,
			[]string{`models.yaml:4: router_settings.fallbacks[0].claude: "claude" is not a model_name in model_list; fix the name or add the entry (aliases: m)`}},
		{"fallback target unknown", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {fallbacks: [{m: [local]}]}\n", nil,
			[]string{`router_settings.fallbacks[0].m[0]: "local" is not a model_name in model_list`}},
		{"fallback to itself", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {fallbacks: [{m: [m]}]}\n", nil,
			[]string{`fallbacks[0].m[0]: "m" falls back to itself`}},
		{"fallback not a list of one-key maps", "model_list: [{model_name: m, proxy_params: {model: echo/x}}, {model_name: n, proxy_params: {model: echo/y}}]\nrouter_settings: {fallbacks: {m: [n]}}\n", nil,
			[]string{"router_settings.fallbacks: must be a list of one-key maps, e.g. - claude: [local, coder]"}},
		{"fallback with two keys", "model_list: [{model_name: m, proxy_params: {model: echo/x}}, {model_name: n, proxy_params: {model: echo/y}}]\nrouter_settings: {fallbacks: [{m: [n], n: [m]}]}\n", nil,
			[]string{"router_settings.fallbacks[0]: must be a list of one-key maps"}},
		{"fallback value not a list", "model_list: [{model_name: m, proxy_params: {model: echo/x}}, {model_name: n, proxy_params: {model: echo/y}}]\nrouter_settings: {fallbacks: [{m: n}]}\n", nil,
			[]string{"fallbacks[0].m: must be a non-empty list of aliases, e.g. m: [backup1, backup2]"}},
		{"fallback primary twice", "model_list: [{model_name: m, proxy_params: {model: echo/x}}, {model_name: n, proxy_params: {model: echo/y}}]\nrouter_settings: {fallbacks: [{m: [n]}, {m: [n]}]}\n", nil,
			[]string{`fallbacks[1].m: fallbacks for "m" given twice; merge them`}},
		{"model_aliases target unknown", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nmodel_aliases: {claude-sonnet-*: claude}\n", nil,
			[]string{`model_aliases."claude-sonnet-*": "claude" is not a model_name in model_list`}},
		{"model_aliases star in the middle", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nmodel_aliases: {claude-*-sonnet: m}\n", nil,
			[]string{`model_aliases."claude-*-sonnet": * is only allowed at the end`}},
		{"model_aliases not a mapping", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nmodel_aliases: [m]\n", nil,
			[]string{"model_aliases: must be a mapping"}},
		{"second YAML document", "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\n---\nmodel_list: []\n", nil,
			[]string{"models.yaml:2: a second YAML document (after ---) is not supported"}},
		{"YAML syntax error", "model_list:\n  - model_name: m\n   proxy_params: {\n", nil, []string{"models.yaml: yaml: line"}},
		{"merge key not a mapping", "x-d: &d [1]\nmodel_list: [{model_name: m, proxy_params: {<<: *d, model: echo/x}}]\n", nil,
			[]string{"proxy_params: merge key (<<) must refer to a mapping"}},
		{"unknown field arriving through a merge", "x-d: &d {tiemout: 3}\nmodel_list: [{model_name: m, proxy_params: {<<: *d, model: echo/x}}]\n", nil,
			[]string{`models.yaml:1: model_list[0] (model_name "m"): proxy_params: unknown field "tiemout"; did you mean "timeout"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _, err := Parse([]byte(tt.src), "models.yaml", envOf(tt.env...))
			if err == nil {
				t.Fatalf("Parse accepted the file; want an error containing %q", tt.want)
			}
			if c != nil {
				t.Errorf("Parse returned a config together with an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestOneErrorPerCause: a misspelt api_base is reported as the typo, not
// also as "api_key required"; an unset variable is not also "required".
func TestOneErrorPerCause(t *testing.T) {
	for _, src := range []string{
		one("{model: openai/q, api_bsae: 'http://h:1/v1'}"),
		one("{model: anthropic/c, api_key: os.environ/NOPE}"),
	} {
		_, _, err := Parse([]byte(src), "models.yaml", envOf())
		if err == nil {
			t.Fatalf("accepted %q", src)
		}
		if n := strings.Count(err.Error(), "\n") + 1; n != 1 {
			t.Errorf("got %d errors for one cause, want 1:\n%v", n, err)
		}
	}
}

// TestRouterCheckedDespiteBadEntry: a typo in router_settings is reported
// in the same pass as a bad entry, without inventing "unknown alias" errors
// for the alias of the entry that failed.
func TestRouterCheckedDespiteBadEntry(t *testing.T) {
	src := "model_list:\n  - {model_name: a, proxy_params: {model: echo/a}}\n  - {model_name: b, proxy_params: {model: nope/b}}\n" +
		"router_settings: {retries: 1, fallbacks: [{a: [b]}]}\nmodel_aliases: {x: b}\n"
	_, _, err := Parse([]byte(src), "models.yaml", envOf())
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	if !strings.Contains(msg, `unknown provider prefix "nope"`) || !strings.Contains(msg, `router_settings: unknown field "retries"`) {
		t.Errorf("missing errors:\n%s", msg)
	}
	if strings.Contains(msg, "is not a model_name") {
		t.Errorf("spurious alias error:\n%s", msg)
	}
}

// TestAllEntriesReported: every bad entry is reported in one load, so a
// user fixes the file in one pass.
func TestAllEntriesReported(t *testing.T) {
	src := "model_list:\n" +
		"  - model_name: a\n    proxy_params: {model: ollama/x}\n" +
		"  - model_name: ok\n    proxy_params: {model: echo/x}\n" +
		"  - model_name: c\n    proxy_params: {model: nope/x}\n"
	_, _, err := Parse([]byte(src), "models.yaml", envOf())
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 errors, got %d:\n%v", len(lines), err)
	}
	if !strings.HasPrefix(lines[0], `models.yaml:3: model_list[0] (model_name "a"): proxy_params.api_base: required`) {
		t.Errorf("first error: %s", lines[0])
	}
	if !strings.HasPrefix(lines[1], `models.yaml:7: model_list[2] (model_name "c"): proxy_params.model: unknown provider prefix "nope"`) {
		t.Errorf("second error: %s", lines[1])
	}
}

// TestCrossReferencesReportedWithEntryErrors: a fallback or model_aliases
// target naming no entry is reported in the same pass as a broken entry's
// error, while one naming the broken entry is not called unknown; and the
// warnings found are returned beside the errors.
func TestCrossReferencesReportedWithEntryErrors(t *testing.T) {
	src := "model_list:\n" +
		"  - model_name: a\n    proxy_params: {model: olama/x}\n" +
		"  - model_name: b\n    proxy_params: {model: ollama/x, api_base: 'http://h:11434/v1'}\n" +
		"router_settings:\n" +
		"  fallbacks:\n" +
		"    - a: [b, nosuch]\n" +
		"model_aliases:\n" +
		"  claude-*: missing\n" +
		"  gpt-*: a\n"
	_, warns, err := Parse([]byte(src), "models.yaml", envOf())
	if err == nil {
		t.Fatal("accepted")
	}
	lines := strings.Split(err.Error(), "\n")
	want := []string{
		`models.yaml:3: model_list[0] (model_name "a"): proxy_params.model: unknown provider prefix "olama"`,
		`models.yaml:8: router_settings.fallbacks[0].a[1]: "nosuch" is not a model_name in model_list`,
		`models.yaml:10: model_aliases."claude-*": "missing" is not a model_name in model_list; fix the name or add the entry (aliases: a, b)`,
	}
	if len(lines) != len(want) {
		t.Fatalf("want %d errors, got %d:\n%v", len(want), len(lines), err)
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("error %d:\n got %s\nwant %s...", i, lines[i], w)
		}
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0], `models.yaml:5: model_list[1] (model_name "b"): proxy_params.api_base`) {
		t.Errorf("warnings %q, want the /v1 base of b", warns)
	}
}

// TestUnreadableNameSuspendsAliasChecks: with an entry whose model_name
// cannot be read, any alias might be that entry's, so none is called
// unknown.
func TestUnreadableNameSuspendsAliasChecks(t *testing.T) {
	src := "model_list:\n" +
		"  - proxy_params: {model: echo/x}\n" +
		"  - model_name: b\n    proxy_params: {model: echo/x}\n" +
		"model_aliases:\n" +
		"  gpt-*: c\n"
	_, _, err := Parse([]byte(src), "models.yaml", envOf())
	if err == nil || strings.Contains(err.Error(), `"c" is not a model_name`) || strings.Count(err.Error(), "\n") != 0 {
		t.Fatalf("want only the missing model_name, got %v", err)
	}
}

func TestBackendKinds(t *testing.T) {
	tests := []struct {
		name, params       string
		provider, model    string
		kind               Kind
		base               string
		local              bool
		key                string
		wantWarningPresent bool
	}{
		{"ollama native, no key", "{model: ollama/llama3.1, api_base: 'http://localhost:11434/'}", "ollama", "llama3.1", KindOllama, "http://localhost:11434", true, "", false},
		{"ollama_chat native", "{model: ollama_chat/qwen3:8b, api_base: 'http://gpu:11434'}", "ollama_chat", "qwen3:8b", KindOllama, "http://gpu:11434", true, "", false},
		{"ollama with optional key", "{model: ollama/x, api_base: 'http://h:11434', api_key: k}", "ollama", "x", KindOllama, "http://h:11434", true, "k", false},
		{"openai with api_base is local", "{model: openai/qwen2.5-coder, api_base: 'http://localhost:1234/v1', api_key: none}", "openai", "qwen2.5-coder", KindOpenAI, "http://localhost:1234/v1", true, "none", false},
		{"openai cloud", "{model: openai/gpt-4o, api_key: sk-1}", "openai", "gpt-4o", KindOpenAI, "https://api.openai.com/v1", false, "sk-1", false},
		{"anthropic cloud", "{model: anthropic/claude-sonnet-4-5, api_key: sk-ant-1}", "anthropic", "claude-sonnet-4-5", KindAnthropic, "https://api.anthropic.com", false, "sk-ant-1", false},
		{"anthropic with own base stays cloud", "{model: anthropic/c, api_key: k, api_base: 'https://corp-proxy.example/anthropic'}", "anthropic", "c", KindAnthropic, "https://corp-proxy.example/anthropic", false, "k", false},
		{"hosted_vllm", "{model: hosted_vllm/Qwen/Qwen3-8B, api_base: 'http://gpu:8000/v1', api_key: none}", "hosted_vllm", "Qwen/Qwen3-8B", KindOpenAI, "http://gpu:8000/v1", true, "none", false},
		{"lm_studio", "{model: lm_studio/qwen, api_base: 'http://localhost:1234/v1', api_key: lm-studio}", "lm_studio", "qwen", KindOpenAI, "http://localhost:1234/v1", true, "lm-studio", false},
		{"llamacpp", "{model: llamacpp/any, api_base: 'http://127.0.0.1:8080/v1', api_key: none}", "llamacpp", "any", KindOpenAI, "http://127.0.0.1:8080/v1", true, "none", false},
		{"groq", "{model: groq/llama-3.3-70b-versatile, api_key: g}", "groq", "llama-3.3-70b-versatile", KindOpenAI, "https://api.groq.com/openai/v1", false, "g", false},
		{"mistral", "{model: mistral/mistral-large-latest, api_key: k}", "mistral", "mistral-large-latest", KindOpenAI, "https://api.mistral.ai/v1", false, "k", false},
		{"deepseek", "{model: deepseek/deepseek-chat, api_key: k}", "deepseek", "deepseek-chat", KindOpenAI, "https://api.deepseek.com/v1", false, "k", false},
		{"openrouter keeps slashes in the model", "{model: openrouter/anthropic/claude-sonnet-4.5, api_key: k}", "openrouter", "anthropic/claude-sonnet-4.5", KindOpenAI, "https://openrouter.ai/api/v1", false, "k", false},
		{"together_ai", "{model: together_ai/meta-llama/Llama-3.3-70B-Instruct-Turbo, api_key: k}", "together_ai", "meta-llama/Llama-3.3-70B-Instruct-Turbo", KindOpenAI, "https://api.together.xyz/v1", false, "k", false},
		{"fireworks_ai", "{model: fireworks_ai/accounts/fireworks/models/qwen3-235b-a22b, api_key: k}", "fireworks_ai", "accounts/fireworks/models/qwen3-235b-a22b", KindOpenAI, "https://api.fireworks.ai/inference/v1", false, "k", false},
		{"xai", "{model: xai/grok-4, api_key: k}", "xai", "grok-4", KindOpenAI, "https://api.x.ai/v1", false, "k", false},
		{"gemini through its native API", "{model: gemini/gemini-2.5-flash, api_key: k}", "gemini", "gemini-2.5-flash", KindGemini, "https://generativelanguage.googleapis.com", false, "k", false},
		{"openai with its own cloud base written out stays cloud", "{model: openai/gpt-4o, api_key: sk-1, api_base: 'https://api.openai.com/v1/'}", "openai", "gpt-4o", KindOpenAI, "https://api.openai.com/v1", false, "sk-1", false},
		{"cloud with overridden base stays cloud", "{model: groq/llama, api_key: k, api_base: 'https://eu.proxy.example/openai/v1/'}", "groq", "llama", KindOpenAI, "https://eu.proxy.example/openai/v1", false, "k", false},
		{"echo", "{model: echo/anything/at all}", "echo", "anything/at all", KindEcho, "", true, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, warns := mustParse(t, one(tt.params), envOf())
			if len(warns) != 0 {
				t.Errorf("unexpected warnings: %q", warns)
			}
			d := c.Deployments[0]
			if d.Provider != tt.provider || d.Model != tt.model || d.Kind != tt.kind || d.APIBase != tt.base || d.Local != tt.local || d.APIKey != tt.key {
				t.Errorf("got provider=%q model=%q kind=%q base=%q local=%v key=%q\nwant provider=%q model=%q kind=%q base=%q local=%v key=%q",
					d.Provider, d.Model, d.Kind, d.APIBase, d.Local, d.APIKey, tt.provider, tt.model, tt.kind, tt.base, tt.local, tt.key)
			}
			if d.Alias != "m" || d.Index != 0 || d.Weight != 1 {
				t.Errorf("alias=%q index=%d weight=%v", d.Alias, d.Index, d.Weight)
			}
		})
	}
}

func TestWarnings(t *testing.T) {
	tests := []struct {
		name, params string
		want         string // "" = no warning
	}{
		{"ollama base ending in /v1", "{model: ollama/x, api_base: 'http://localhost:11434/v1'}",
			`models.yaml:3: model_list[0] (model_name "m"): proxy_params.api_base: ends in /v1, but ollama/ speaks Ollama's native API at the server root`},
		{"ollama base ending in /api/chat", "{model: ollama_chat/x, api_base: 'http://localhost:11434/api/chat'}", "the gateway appends /api/chat itself"},
		{"ollama root is fine", "{model: ollama/x, api_base: 'http://localhost:11434'}", ""},
		{"compat base without version", "{model: openai/x, api_base: 'http://localhost:1234', api_key: none}",
			"proxy_params.api_base: has no version segment such as /v1; a chat-completions-compatible server is addressed at its version root"},
		{"vllm base without version", "{model: hosted_vllm/x, api_base: 'http://gpu:8000/', api_key: none}", "has no version segment such as /v1"},
		{"compat base ending in /chat/completions", "{model: lm_studio/x, api_base: 'http://h:1234/v1/chat/completions', api_key: none}",
			"the gateway appends /chat/completions itself"},
		{"compat base with version is fine", "{model: llamacpp/x, api_base: 'http://h:8080/v1', api_key: none}", ""},
		{"cloud override without version", "{model: mistral/x, api_base: 'https://proxy.example', api_key: k}", "an OpenAI-compatible API is addressed at its version root"},
		{"anthropic base ending in /v1", "{model: anthropic/c, api_base: 'https://api.anthropic.com/v1/', api_key: k}",
			"proxy_params.api_base: ends in /v1, but an anthropic/ api_base is the root without /v1"},
		{"anthropic base ending in /v1/messages", "{model: anthropic/c, api_base: 'https://gw.example/v1/messages', api_key: k}", "appends /v1/messages itself"},
		{"cloud key that is a placeholder", "{model: openai/gpt-4o, api_key: none}",
			"proxy_params.api_key: looks like a placeholder, but openai/ is a cloud API that needs a real key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "model_list:\n  - model_name: m\n    proxy_params: " + tt.params + "\n"
			_, warns := mustParse(t, src, envOf())
			if tt.want == "" {
				if len(warns) != 0 {
					t.Errorf("unexpected warnings: %q", warns)
				}
				return
			}
			if len(warns) != 1 || !strings.Contains(warns[0], tt.want) {
				t.Errorf("warnings %q\nwant one containing %q", warns, tt.want)
			}
		})
	}
}

func TestEnvResolution(t *testing.T) {
	src := "model_list:\n" +
		"  - model_name: claude\n    proxy_params:\n      model: anthropic/c\n      api_key: os.environ/ANTHROPIC_API_KEY\n" +
		"      extra_headers: {X-Org: os.environ/ORG, X-Plain: literal}\n" +
		"  - model_name: local\n    proxy_params: {model: ollama/x, api_base: os.environ/OLLAMA_BASE}\n"
	var asked []string
	getenv := func(k string) (string, bool) {
		asked = append(asked, k)
		return envOf("ANTHROPIC_API_KEY", "sk-ant-secret", "ORG", "org-7", "OLLAMA_BASE", "http://gpu:11434/")(k)
	}
	c, _ := mustParse(t, src, getenv)
	if got := strings.Join(asked, ","); got != "ANTHROPIC_API_KEY,ORG,OLLAMA_BASE" {
		t.Errorf("variables read: %s", got)
	}
	claude := deploymentsOf(c, "claude")[0]
	if claude.APIKey != "sk-ant-secret" {
		t.Errorf("APIKey = %q", claude.APIKey)
	}
	if want := map[string]string{"X-Org": "org-7", "X-Plain": "literal"}; !reflect.DeepEqual(claude.ExtraHeaders, want) {
		t.Errorf("ExtraHeaders = %v, want %v", claude.ExtraHeaders, want)
	}
	if base := deploymentsOf(c, "local")[0].APIBase; base != "http://gpu:11434" {
		t.Errorf("APIBase = %q", base)
	}
	// A literal value that merely contains os.environ/ later is not a reference.
	c, _ = mustParse(t, one("{model: anthropic/c, api_key: 'x-os.environ/K'}"), envOf())
	if c.Deployments[0].APIKey != "x-os.environ/K" {
		t.Errorf("APIKey = %q", c.Deployments[0].APIKey)
	}
}

// TestSecretsNeverPrinted feeds secrets through every path that can fail
// or be printed and checks that none of the output contains them.
func TestSecretsNeverPrinted(t *testing.T) {
	const secret = "sk-very-secret-4242"
	env := envOf("KEY", secret, "BADKEY", " "+secret+"\n", "BASE", "http://user:"+secret+"@h:1", "HDR", secret+"\r\nX-Evil: 1", "QBASE", "http://h:1/?k="+secret)
	bad := []string{
		one("{model: anthropic/c, api_key: os.environ/BADKEY}"),
		one("{model: ollama/x, api_base: os.environ/BASE}"),
		one("{model: ollama/x, api_base: os.environ/QBASE}"),
		one("{model: echo/x, extra_headers: {X-Token: os.environ/HDR}}"),
		one("{model: echo/x, api_key: os.environ/KEY}"),
		one("{model: echo/x, api_base: os.environ/KEY}"),
		one("{model: ollama/x, api_base: os.environ/KEY}"),
		one("{model: openai/x, api_key: [os.environ/KEY]}"),
	}
	for _, src := range bad {
		_, warns, err := Parse([]byte(src), "models.yaml", env)
		if err == nil {
			t.Errorf("accepted %s", src)
			continue
		}
		out := err.Error() + strings.Join(warns, "\n")
		if strings.Contains(out, secret) {
			t.Errorf("secret printed for %s:\n%s", src, out)
		}
	}
	c, _ := mustParse(t, one("{model: anthropic/c, api_key: os.environ/KEY, extra_headers: {X-Token: os.environ/KEY}}"), env)
	d := c.Deployments[0]
	js, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{d.String(), fmt.Sprintf("%v %+v %#v %s", d, d, d, d), fmt.Sprintf("%v %+v", *d, *d), string(js)} {
		if strings.Contains(out, secret) {
			t.Errorf("secret printed: %s", out)
		}
	}
	if d.APIKey != secret || d.ExtraHeaders["X-Token"] != secret {
		t.Errorf("secret not resolved into the deployment")
	}
}

func TestTimes(t *testing.T) {
	tests := []struct {
		text string
		want time.Duration
	}{
		{"30", 30 * time.Second},
		{"1.5", 1500 * time.Millisecond},
		{"0.25", 250 * time.Millisecond},
		{"'45'", 45 * time.Second},
		{"30s", 30 * time.Second},
		{"'1m30s'", 90 * time.Second},
		{"2h", 2 * time.Hour},
		{"500ms", 500 * time.Millisecond},
		{"1e2", 100 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			c, _ := mustParse(t, one("{model: echo/x, timeout: "+tt.text+", stream_timeout: "+tt.text+"}")+
				"router_settings: {timeout: "+tt.text+", stream_timeout: "+tt.text+", cooldown_time: "+tt.text+"}\n", envOf())
			d, r := c.Deployments[0], c.Router
			for _, got := range []time.Duration{d.Timeout, d.StreamTimeout, r.Timeout, r.StreamTimeout, r.CooldownTime} {
				if got != tt.want {
					t.Errorf("got %v, want %v (deployment %v/%v, router %v/%v/%v)", got, tt.want, d.Timeout, d.StreamTimeout, r.Timeout, r.StreamTimeout, r.CooldownTime)
					break
				}
			}
		})
	}
	// cooldown_time: 0 is meaningful (no cooldown), unlike a zero timeout.
	c, _ := mustParse(t, one("{model: echo/x}")+"router_settings: {cooldown_time: 0}\n", envOf())
	if c.Router.CooldownTime != 0 {
		t.Errorf("CooldownTime = %v, want 0", c.Router.CooldownTime)
	}
}

func TestPicodollars(t *testing.T) {
	tests := []struct {
		text    string
		want    int64
		wantErr string
	}{
		{"0.000003", 3_000_000, ""},
		{"3e-06", 3_000_000, ""},
		{"3.0e-6", 3_000_000, ""},
		{"3E-6", 3_000_000, ""},
		{"1.25e-7", 125_000, ""},
		{"0.00000375", 3_750_000, ""},
		{"1.5e-05", 15_000_000, ""},
		{"+2e-6", 2_000_000, ""},
		{"0", 0, ""},
		{"0.0", 0, ""},
		{"-0", 0, ""},
		{"1", 1_000_000_000_000, ""},
		{"1e-12", 1, ""},
		{"0.000000000001", 1, ""},
		{"10.5e-13", 0, "finer than 1 picodollar"},
		{"1.000000000000e-12", 1, ""},
		{"1e-13", 0, "finer than 1 picodollar"},
		{"0.0000000000015", 0, "finer than 1 picodollar"},
		{"-0.000001", 0, "must not be negative"},
		{"9223373", 0, "too large"},
		{"9223372", 9_223_372_000_000_000_000, ""},
		{"9e6", 9_000_000_000_000_000_000, ""},
		{"1e9999", 0, "out of range"},
		{"", 0, "must be a price"},
		{".", 0, "must be a price"},
		{"1e", 0, "must be a price"},
		{"1e+", 0, "must be a price"},
		{"0x10", 0, "must be a price"},
		{"1_000", 0, "must be a price"},
		{".inf", 0, "must be a price"},
		{"NaN", 0, "must be a price"},
		{"3e-6e1", 0, "must be a price"},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := parsePicodollars(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("parsePicodollars(%q) = %d, %v; want error %q", tt.text, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parsePicodollars(%q) = %d, %v; want %d", tt.text, got, err, tt.want)
			}
		})
	}
}

func TestFullExample(t *testing.T) {
	data, err := os.ReadFile("testdata/models.example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	env := envOf("LLAMA_KEY", "llama-k", "ANTHROPIC_API_KEY", "sk-ant-k", "ANTHROPIC_BETA", "context-1m-2025-08-07",
		"GROQ_API_KEY", "gsk-k", "GEMINI_API_KEY", "gem-k")
	c, warns := mustParse(t, string(data), env)
	if len(warns) != 0 {
		t.Errorf("unexpected warnings: %q", warns)
	}
	i64 := func(v int64) *int64 { return &v }
	two := 2
	want := []Deployment{
		{Index: 0, Alias: "local", Provider: "ollama", Kind: KindOllama, Model: "llama3.1", APIBase: "http://localhost:11434",
			Local: true, StreamTimeout: 10 * time.Minute, RPM: 600, Weight: 1},
		{Index: 1, Alias: "coder", Provider: "openai", Kind: KindOpenAI, Model: "qwen2.5-coder", APIBase: "http://localhost:1234/v1",
			APIKey: "none", Local: true, Weight: 2.5},
		{Index: 2, Alias: "coder", Provider: "llamacpp", Kind: KindOpenAI, Model: "qwen2.5-coder-7b", APIBase: "http://127.0.0.1:8080/v1",
			APIKey: "llama-k", Local: true, Weight: 1},
		{Index: 3, Alias: "claude", Provider: "anthropic", Kind: KindAnthropic, Model: "claude-sonnet-4-5", APIBase: "https://api.anthropic.com",
			APIKey: "sk-ant-k", Timeout: 120 * time.Second, MaxRetries: &two, TPM: 400000, Weight: 1,
			ExtraHeaders: map[string]string{"Anthropic-Beta": "context-1m-2025-08-07", "X-Team": "platform"},
			Info: ModelInfo{InputCostPerToken: i64(3_000_000), OutputCostPerToken: i64(15_000_000),
				CacheReadInputTokenCost: i64(300_000), CacheCreationInputTokenCost: i64(3_750_000), MaxInputTokens: 200000, MaxOutputTokens: 64000}},
		{Index: 4, Alias: "fast", Provider: "groq", Kind: KindOpenAI, Model: "meta-llama/llama-4-scout-17b-16e-instruct",
			APIBase: "https://api.groq.com/openai/v1", APIKey: "gsk-k", Timeout: 30 * time.Second, Weight: 1},
		{Index: 5, Alias: "gem", Provider: "gemini", Kind: KindGemini, Model: "gemini-2.5-flash", ReasonsUnseen: true,
			APIBase: "https://generativelanguage.googleapis.com", APIKey: "gem-k", Weight: 1},
		{Index: 6, Alias: "offline", Provider: "echo", Kind: KindEcho, Model: "anything", Local: true, Weight: 1},
	}
	if len(c.Deployments) != len(want) {
		t.Fatalf("got %d deployments, want %d", len(c.Deployments), len(want))
	}
	for i, d := range c.Deployments {
		got := *d
		if len(got.ID) != 12 {
			t.Errorf("deployment %d: ID %q is not 12 hex digits", i, got.ID)
		}
		got.ID = ""
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("deployment %d:\n got %#v\nwant %#v", i, fields(got), fields(want[i]))
		}
	}
	wantRouter := RouterSettings{
		RoutingStrategy: StrategyLeastBusy, NumRetries: 1, Timeout: 600 * time.Second, StreamTimeout: 1500 * time.Millisecond,
		Fallbacks:    []Fallback{{Alias: "claude", To: []string{"coder", "local"}}, {Alias: "fast", To: []string{"local"}}},
		CooldownTime: 30 * time.Second, AllowedFails: 5, SessionAffinity: true,
	}
	if !reflect.DeepEqual(c.Router, wantRouter) {
		t.Errorf("Router:\n got %+v\nwant %+v", c.Router, wantRouter)
	}
	wantAliases := []ModelAlias{{"claude-sonnet-*", "claude"}, {"claude-*", "coder"}, {"claude-haiku-4-5", "fast"}, {"gpt-4o", "coder"}}
	if !reflect.DeepEqual(c.ModelAliases, wantAliases) {
		t.Errorf("ModelAliases = %v", c.ModelAliases)
	}
	if got := c.Aliases(); !reflect.DeepEqual(got, []string{"local", "coder", "claude", "fast", "gem", "offline"}) {
		t.Errorf("Aliases() = %v", got)
	}
	if got := deploymentsOf(c, "coder"); len(got) != 2 || got[0].Index != 1 || got[1].Index != 2 {
		t.Errorf("Lookup(coder) = %v", got)
	}
	if got := deploymentsOf(c, "nope"); got != nil {
		t.Errorf("Lookup(nope) = %v, want nil", got)
	}
	if got := c.FallbacksFor("claude"); !reflect.DeepEqual(got, []string{"coder", "local"}) {
		t.Errorf("FallbacksFor(claude) = %v", got)
	}
	if got := c.FallbacksFor("local"); got != nil {
		t.Errorf("FallbacksFor(local) = %v, want nil", got)
	}
}

// fields prints a Deployment with every field, which String deliberately
// does not; used only for test diffs of non-secret values.
func fields(d Deployment) string {
	type plain Deployment
	return fmt.Sprintf("%+v", plain(d))
}

func TestDefaults(t *testing.T) {
	c, _ := mustParse(t, one("{model: echo/x}"), envOf())
	want := RouterSettings{RoutingStrategy: StrategySimpleShuffle, NumRetries: 0, CooldownTime: 60 * time.Second, AllowedFails: 3, SessionAffinity: true}
	if !reflect.DeepEqual(c.Router, want) {
		t.Errorf("Router = %+v, want %+v", c.Router, want)
	}
	d := c.Deployments[0]
	if d.Weight != 1 || d.MaxRetries != nil || d.Timeout != 0 || d.RPM != 0 || d.ExtraHeaders != nil || d.Info != (ModelInfo{}) {
		t.Errorf("deployment defaults: %s", fields(*d))
	}
	if c.ModelAliases != nil || c.Router.Fallbacks != nil {
		t.Errorf("want nil slices, got %v %v", c.ModelAliases, c.Router.Fallbacks)
	}
	c, _ = mustParse(t, "model_list: [{model_name: m, proxy_params: {model: echo/x}}]\nrouter_settings: {session_affinity: false}\n", envOf())
	if c.Router.SessionAffinity {
		t.Errorf("session_affinity: false must turn affinity off")
	}
	c, _ = mustParse(t, one("{model: echo/x, max_retries: 0}"), envOf())
	if mr := c.Deployments[0].MaxRetries; mr == nil || *mr != 0 {
		t.Errorf("max_retries: 0 must be set, not nil")
	}
}

func TestSeveralDeploymentsPerAlias(t *testing.T) {
	src := "model_list:\n" +
		"  - {model_name: coder, proxy_params: {model: ollama/qwen, api_base: 'http://a:11434'}}\n" +
		"  - {model_name: claude, proxy_params: {model: anthropic/c, api_key: k}}\n" +
		"  - {model_name: coder, proxy_params: {model: openai/qwen, api_base: 'http://b:1234/v1', api_key: none, weight: 3}}\n" +
		"  - {model_name: coder, proxy_params: {model: groq/qwen, api_key: g}}\n"
	c, _ := mustParse(t, src, envOf())
	got := deploymentsOf(c, "coder")
	if len(got) != 3 {
		t.Fatalf("Lookup(coder) has %d deployments, want 3", len(got))
	}
	for i, wantBase := range []string{"http://a:11434", "http://b:1234/v1", "https://api.groq.com/openai/v1"} {
		if got[i].APIBase != wantBase || got[i].Alias != "coder" {
			t.Errorf("coder[%d] = %s", i, got[i])
		}
	}
	if got[0].Local != true || got[1].Local != true || got[2].Local != false {
		t.Errorf("local and cloud must mix: %v %v %v", got[0].Local, got[1].Local, got[2].Local)
	}
	if !reflect.DeepEqual(c.Aliases(), []string{"coder", "claude"}) {
		t.Errorf("Aliases() = %v", c.Aliases())
	}
}

func TestModelAliasesResolve(t *testing.T) {
	src := "model_list:\n" +
		"  - {model_name: claude, proxy_params: {model: anthropic/c, api_key: k}}\n" +
		"  - {model_name: local, proxy_params: {model: echo/l}}\n" +
		"  - {model_name: haiku, proxy_params: {model: echo/h}}\n" +
		"  - {model_name: claude-opus-4-1, proxy_params: {model: echo/o}}\n" +
		"model_aliases:\n" +
		"  claude-*: local\n" +
		"  claude-sonnet-*: claude\n" +
		"  claude-haiku-4-5-20251001: haiku\n" +
		"  claude-haiku-*: claude\n" +
		"  gpt-4o: local\n"
	c, _ := mustParse(t, src, envOf())
	tests := []struct{ model, alias string }{
		{"claude", "claude"},                     // an alias is itself
		{"claude-opus-4-1", "claude-opus-4-1"},   // an exact alias wins over every pattern
		{"claude-sonnet-4-5-20250929", "claude"}, // longer pattern beats claude-*
		{"claude-haiku-4-5-20251001", "haiku"},   // exact key beats claude-haiku-*
		{"claude-haiku-4-5", "claude"},           // pattern
		{"claude-3-7-sonnet-latest", "local"},    // only claude-* matches
		{"gpt-4o", "local"},                      // exact key
		{"gpt-4o-mini", ""},                      // exact keys are not prefixes
		{"Claude-sonnet-4", ""},                  // case-sensitive
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := c.Resolve(tt.model)
		if got != tt.alias || ok != (tt.alias != "") {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tt.model, got, ok, tt.alias)
		}
	}
	c, _ = mustParse(t, one("{model: echo/x}")+"model_aliases: {'*': m}\n", envOf())
	if got, ok := c.Resolve("anything-at-all"); got != "m" || !ok {
		t.Errorf("catch-all * = %q, %v", got, ok)
	}
}

func TestModelAliasShadowedWarning(t *testing.T) {
	src := "model_list:\n  - {model_name: a, proxy_params: {model: echo/a}}\n  - {model_name: b, proxy_params: {model: echo/b}}\n" +
		"model_aliases:\n  a: b\n"
	_, warns := mustParse(t, src, envOf())
	if len(warns) != 1 || !strings.Contains(warns[0], `models.yaml:5: model_aliases."a": is also a model_name`) {
		t.Errorf("warnings = %q", warns)
	}
}

func TestIDs(t *testing.T) {
	src := "model_list:\n" +
		"  - {model_name: a, proxy_params: {model: ollama/x, api_base: 'http://h:11434'}}\n" +
		"  - {model_name: a, proxy_params: {model: ollama/x, api_base: 'http://h:11434'}}\n" + // identical twin
		"  - {model_name: a, proxy_params: {model: ollama/x, api_base: 'http://g:11434'}}\n" +
		"  - {model_name: b, proxy_params: {model: ollama/x, api_base: 'http://h:11434'}}\n" +
		"  - {model_name: a, proxy_params: {model: ollama_chat/x, api_base: 'http://h:11434'}}\n" +
		"  - {model_name: a, proxy_params: {model: ollama/y, api_base: 'http://h:11434'}}\n"
	c1, _ := mustParse(t, src, envOf())
	c2, _ := mustParse(t, src, envOf())
	seen := map[string]int{}
	for i, d := range c1.Deployments {
		if d.ID != c2.Deployments[i].ID {
			t.Errorf("deployment %d: ID changed between parses: %s vs %s", i, d.ID, c2.Deployments[i].ID)
		}
		if j, dup := seen[d.ID]; dup {
			t.Errorf("deployments %d and %d share ID %s", j, i, d.ID)
		}
		seen[d.ID] = i
	}
	// Secrets and tuning are not identity; position among other entries is
	// not either, so reordering unrelated entries keeps IDs.
	moved := "model_list:\n" +
		"  - {model_name: b, proxy_params: {model: ollama/x, api_base: 'http://h:11434/', api_key: other, timeout: 5}}\n" +
		"  - {model_name: a, proxy_params: {model: ollama/x, api_base: 'http://g:11434'}}\n"
	c3, _ := mustParse(t, moved, envOf())
	if c3.Deployments[0].ID != c1.Deployments[3].ID || c3.Deployments[1].ID != c1.Deployments[2].ID {
		t.Errorf("IDs changed with order, key or timeout: %s %s vs %s %s",
			c3.Deployments[0].ID, c3.Deployments[1].ID, c1.Deployments[3].ID, c1.Deployments[2].ID)
	}
}

func TestLineNumbers(t *testing.T) {
	src := "model_list:\n" +
		"  - model_name: ok\n" +
		"    proxy_params:\n" +
		"      model: echo/x\n" +
		"  - model_name: coder\n" +
		"    proxy_params:\n" +
		"      model: openai/q\n" +
		"      api_base: http://h:1/v1\n" +
		"      timeout: forever\n"
	_, _, err := Parse([]byte(src), "/etc/modelgate/models.yaml", envOf())
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		`/etc/modelgate/models.yaml:9: model_list[1] (model_name "coder"): proxy_params.timeout: must be seconds`,
		`/etc/modelgate/models.yaml:6: model_list[1] (model_name "coder"): proxy_params.api_key: required for a chat-completions-compatible server`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error does not contain %q:\n%v", w, err)
		}
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(path, []byte(one("{model: echo/x}")), 0o600); err != nil {
		t.Fatal(err)
	}
	c, warns, err := Load(path)
	if err != nil || len(warns) != 0 || len(deploymentsOf(c, "m")) != 1 {
		t.Fatalf("Load = %v, %q, %v", c, warns, err)
	}
	if err := os.WriteFile(path, []byte(one("{model: nope/x}")), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(path); err == nil || !strings.HasPrefix(err.Error(), path+":3: ") {
		t.Errorf("Load error does not name the path and line: %v", err)
	}
	missing := filepath.Join(dir, "missing.yaml")
	if _, _, err := Load(missing); err == nil || !strings.Contains(err.Error(), missing) || !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("Load(missing) = %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

func TestKnown(t *testing.T) {
	known := strings.Split(knownList(), ", ")
	if len(known) != 18 {
		t.Fatalf("knownList() = %q", knownList())
	}
	for _, p := range known {
		if _, ok := lookupProvider(p); !ok {
			t.Errorf("knownList() lists %q, which lookupProvider does not know", p)
		}
	}
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"api_base", "api_base", 0},
		{"api_bsae", "api_base", 1},
		{"api_bas", "api_base", 1},
		{"tiemout", "timeout", 1},
		{"model", "weight", 6},
		{"", "abc", 3},
	}
	for _, tt := range tests {
		if got := editDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	c := benchConfig(b)
	b.ReportAllocs()
	for b.Loop() {
		if len(deploymentsOf(c, "alias-37")) != 2 {
			b.Fatal("lookup failed")
		}
	}
}

func BenchmarkResolve(b *testing.B) {
	c := benchConfig(b)
	for _, model := range []string{"alias-37", "client-model-12", "claude-sonnet-4-5-20250929", "unknown-model"} {
		b.Run(model, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.Resolve(model)
			}
		})
	}
}

// benchConfig has 50 aliases of two deployments each and 40 model_aliases.
func benchConfig(b *testing.B) *Config {
	var sb strings.Builder
	sb.WriteString("model_list:\n")
	for i := range 50 {
		for j := range 2 {
			fmt.Fprintf(&sb, "  - {model_name: alias-%d, proxy_params: {model: echo/m%d}}\n", i, j)
		}
	}
	sb.WriteString("model_aliases:\n")
	for i := range 20 {
		fmt.Fprintf(&sb, "  client-model-%d: alias-%d\n  prefix-%d-*: alias-%d\n", i, i, i, i)
	}
	sb.WriteString("  claude-*: alias-1\n  claude-sonnet-*: alias-2\n")
	c, _, err := Parse([]byte(sb.String()), "bench.yaml", envOf())
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// deploymentsOf lists alias's deployments in file order.
func deploymentsOf(c *Config, alias string) []*Deployment {
	var out []*Deployment
	for _, d := range c.Deployments {
		if d.Alias == alias {
			out = append(out, d)
		}
	}
	return out
}

func TestSecretsAction(t *testing.T) {
	c, _, err := Parse([]byte(`model_list:
  - model_name: cloud
    proxy_params: {model: openai/gpt-4o, api_key: sk-x}
  - model_name: local
    proxy_params: {model: ollama/llama3.1, api_base: "http://127.0.0.1:11434"}
  - model_name: strict
    proxy_params: {model: ollama/llama3.1, api_base: "http://127.0.0.1:11434"}
    secrets: {action: block}
`), "models.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	want := []SecretsAction{SecretsRedact, SecretsLog, SecretsBlock}
	for i, d := range c.Deployments {
		if got := d.SecretsPolicy(); got != want[i] {
			t.Errorf("%s: %s, want %s", d.Alias, got, want[i])
		}
	}
	_, _, err = Parse([]byte(`model_list:
  - model_name: x
    proxy_params: {model: openai/gpt-4o, api_key: sk-x}
    secrets: {action: scrub}
`), "models.yaml", func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), `models.yaml:4: model_list[0] (model_name "x"): secrets.action: unknown action "scrub"; use redact, block, log or off`) {
		t.Fatalf("err %v", err)
	}
}

// TestSupportsReasoningRead: model_info.supports_reasoning, LiteLLM's
// name, is read as a switch; unset is nil (the name decides).
func TestSupportsReasoningRead(t *testing.T) {
	cfg, _, err := Parse([]byte("model_list:\n  - {model_name: a, proxy_params: {model: echo/x}, model_info: {supports_reasoning: true}}\n  - {model_name: b, proxy_params: {model: echo/x}, model_info: {supports_reasoning: false}}\n  - {model_name: c, proxy_params: {model: echo/x}}\n"), "models.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	for alias, want := range map[string]string{"a": "true", "b": "false", "c": "unset"} {
		got := "unset"
		if v := cfg.byAlias[alias][0].Info.SupportsReasoning; v != nil {
			got = strconv.FormatBool(*v)
		}
		if got != want {
			t.Errorf("%s: supports_reasoning %s, want %s", alias, got, want)
		}
	}
}
