package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
)

// TestCodexWorkHook: Codex with the hook `caddy agent-hook install --for
// codex` registers (hooks.json, with Codex's hooks feature on) reports its
// session's repository and branch to the gateway, and the work report
// attributes the session's cost to them.
func TestCodexWorkHook(t *testing.T) {
	codex := testbin.Codex(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	g := startGateway(t, gatewayConfig{models: "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n    model_info:\n      input_cost_per_token: 0.001\n      output_cost_per_token: 0.001\n"})
	repo := filepath.Join(t.TempDir(), "api")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q", "-b", "feat/API-9-limits")
	gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "start")
	gitIn(t, repo, "remote", "add", "origin", "git@github.com:acme/api.git")

	home := t.TempDir()
	install := exec.Command(testbin.Path(t), "agent-hook", "install", "--for", "codex", "--global")
	install.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("agent-hook install --for codex: %v\n%s", err, out)
	}
	hooks, _ := os.ReadFile(filepath.Join(home, ".codex", "hooks.json"))
	t.Logf("hooks.json: %s", hooks)
	config := codexConfig(g.base, "echo") + "\n[features]\nhooks = true\n"
	if err := os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	// An interactive Codex asks its user to trust a new hook; exec has no
	// one to ask, so it runs them only when told to.
	cmd := exec.Command(codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust",
		"--color", "never", "say hi")
	cmd.Dir = repo
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "CODEX_HOME=" + filepath.Join(home, ".codex"),
		"MODELGATE_API_KEY=" + aliceKey, "MODELGATE_URL=" + g.base}
	out, err := cmd.CombinedOutput()
	t.Logf("codex: %s", out)
	if err != nil {
		t.Fatalf("codex exec: %v", err)
	}
	var row string
	if !testwait.Until(func() bool {
		p := workReport(t, g, "group_by[]=repository&group_by[]=branch&group_by[]=ticket")
		for _, r := range p.Data[0].Results {
			if !r.Unattributed {
				row = fmt.Sprint(deref(r.Repository), " ", deref(r.Branch), " ", deref(r.Ticket), " ", r.Sessions)
				return r.Amount != "0.0"
			}
		}
		return false
	}) {
		t.Fatalf("Codex's session was never attributed: %+v; gateway log:\n%s", workReport(t, g, "group_by[]=branch"), g.stderr.String())
	}
	if row != "github.com/acme/api feat/API-9-limits API-9 1" {
		t.Errorf("row %q", row)
	}
}
