package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// codexCatalogFor is what docs/codex.md tells users to run: Codex's own
// bundled catalog entry of a model (the first with apply_patch_tool_type
// set and neither responses lite nor a tool_mode), renamed to the gateway alias, as a model_catalog_json file.
func codexCatalogFor(t *testing.T, codex, alias string) string {
	t.Helper()
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "debug", "models", "--bundled")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("codex debug models --bundled: %v", err)
	}
	var cat struct {
		Models []map[string]json.RawMessage `json:"models"`
	}
	if err := json.Unmarshal(out, &cat); err != nil {
		t.Fatalf("codex's catalog: %v", err)
	}
	for _, m := range cat.Models {
		// An entry in "responses lite" or a tool_mode sends input items
		// only OpenAI's own API reads (additional_tools).
		plain := string(m["use_responses_lite"]) != "true" && (len(m["tool_mode"]) == 0 || string(m["tool_mode"]) == "null")
		if p := string(m["apply_patch_tool_type"]); plain && p != "" && p != "null" {
			m["slug"], _ = json.Marshal(alias)
			m["display_name"], _ = json.Marshal(alias)
			b, _ := json.Marshal(map[string]any{"models": []any{m}})
			path := filepath.Join(t.TempDir(), "modelgate-models.json")
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return path
		}
	}
	t.Fatal("no model in Codex's bundled catalog has apply_patch_tool_type without responses lite or a tool_mode")
	return ""
}

// runCodexStderr runs codex exec with config and returns its stderr.
func runCodexStderr(t *testing.T, codex, config, prompt string) string {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "--ephemeral",
		"--dangerously-bypass-approvals-and-sandbox", "--color", "never", prompt)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + home, "MODELGATE_API_KEY=" + aliceKey}
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("codex exec: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// TestCodexModelCatalog: real Codex on a gateway alias it does not know
// warns that its metadata is missing and offers no apply_patch tool; with
// model_catalog_json naming the alias (built as docs/codex.md says) it
// warns of nothing and sends apply_patch among its tools.
func TestCodexModelCatalog(t *testing.T) {
	codex := testbin.Codex(t)
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	warning := "Model metadata for `oa` not found"
	tools := func() string {
		var b strings.Builder
		var body struct {
			Tools []json.RawMessage `json:"tools"`
		}
		_ = json.Unmarshal(u.openaiRec.Last().Body, &body)
		for _, tl := range body.Tools {
			b.Write(tl)
		}
		return b.String()
	}

	out := runCodexStderr(t, codex, codexConfig(g.base, "oa"), "Say hello")
	if !strings.Contains(out, warning) {
		t.Errorf("without a catalog Codex did not warn about the alias's metadata:\n%s", out)
	}
	if strings.Contains(tools(), "apply_patch") {
		t.Errorf("without a catalog Codex sent apply_patch: %s", tools())
	}

	catalog := codexCatalogFor(t, codex, "oa")
	out = runCodexStderr(t, codex, "model_catalog_json = "+strconvQuote(catalog)+"\n"+codexConfig(g.base, "oa"), "Say hello")
	if strings.Contains(out, warning) || strings.Contains(out, "model_catalog_json") {
		t.Errorf("with the catalog Codex still warned:\n%s", out)
	}
	if !strings.Contains(tools(), "apply_patch") {
		t.Errorf("with the catalog Codex sent no apply_patch tool: %s", tools())
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
