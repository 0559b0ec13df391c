package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
)

const forgeSecret = "forge-webhook-secret-0123"

// pricedCoder is a models file sending Claude Code's models to the
// scripted backend at base, priced so that its requests cost.
func pricedCoder(base string) string {
	return fmt.Sprintf(`model_list:
  - model_name: local-coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
    model_info:
      input_cost_per_token: 0.00001
      output_cost_per_token: 0.00003
model_aliases:
  "claude-*": local-coder
`, base, upstreamKey)
}

// workReport reads the work report of today under the admin key.
func workReport(t *testing.T, g *gateway, query string) ledger.WorkReportPage {
	t.Helper()
	day := time.Now().UTC().Format("2006-01-02")
	st, _, body := g.do(t, "GET", "/v1/organizations/usage_report/work?starting_at="+day+"T00:00:00Z&limit=1&"+query, adminKey, "")
	if st != http.StatusOK {
		t.Fatalf("work report: %d %s", st, body)
	}
	var p ledger.WorkReportPage
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// costCents is today's cost report total in cents, as its decimal string.
func costCents(t *testing.T, g *gateway) string {
	t.Helper()
	day := time.Now().UTC().Format("2006-01-02")
	st, _, body := g.do(t, "GET", "/v1/organizations/cost_report?starting_at="+day+"T00:00:00Z&limit=1", adminKey, "")
	if st != http.StatusOK {
		t.Fatalf("cost report: %d %s", st, body)
	}
	var p ledger.CostReportPage
	if err := json.Unmarshal(body, &p); err != nil || len(p.Data) != 1 {
		t.Fatalf("cost report %s: %v", body, err)
	}
	if len(p.Data[0].Results) == 0 {
		return "0"
	}
	return p.Data[0].Results[0].Amount
}

func sumAmounts(rs []ledger.WorkResult) float64 {
	var n float64
	for _, r := range rs {
		var f float64
		_, _ = fmt.Sscan(r.Amount, &f)
		n += f
	}
	return n
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.email=dev@example.com", "-c", "user.name=dev"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestWorkReportWithClaudeCode runs real Claude Code, with the hook that
// `caddy agent-hook install` registers, in a real git repository whose
// remote URL carries credentials: one session on a feature branch, the
// same session resumed after switching to a second branch. The work
// report splits the cost by branch, and after a signed webhook marks the
// second branch's pull request merged, by pull request; every split sums
// to the cost report. A forged or replayed webhook is refused, and the
// credentials reach neither the ledger, the log nor a report.
func TestWorkReportWithClaudeCode(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not on PATH")
	}
	script := &scriptedBackend{}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	g := startGateway(t, gatewayConfig{
		models:    pricedCoder(up.URL),
		siteExtra: "llm_forge {\n\t\tgithub_secret {env.FORGE_SECRET}\n\t}",
		env:       []string{"FORGE_SECRET=" + forgeSecret},
	})

	const secret = "ghp_SECRETtoken0123456789"
	repo := filepath.Join(t.TempDir(), "shop")
	if err := os.Mkdir(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "init", "-q", "-b", "main")
	gitIn(t, repo, "commit", "-q", "--allow-empty", "-m", "start")
	gitIn(t, repo, "remote", "add", "origin", "https://bot:"+secret+"@github.com/Acme/Shop.git")
	gitIn(t, repo, "checkout", "-q", "-b", "feat/SHOP-12-cart")
	install := exec.Command(testbin.Path(t), "agent-hook", "install", "--project", repo)
	install.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("agent-hook install: %v\n%s", err, out)
	}
	// The project's own settings, not committed: keep git's status clean.
	if err := os.WriteFile(filepath.Join(repo, ".git", "info", "exclude"), []byte(".claude/\nmarker.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One HOME for both runs, so the second can resume the first's session
	// (runClaude's own HOME is fresh per run; a later HOME wins).
	env := []string{"ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey, "HOME=" + t.TempDir()}
	args := []string{"--allowedTools", "Bash"}
	const prompt = "Create the marker file with the Bash tool, then say you are done."
	first := runClaude(t, claude, claudeRun{prompt: prompt, dir: repo, env: env, args: args})
	gitIn(t, repo, "checkout", "-q", "-b", "fix-login")
	second := runClaude(t, claude, claudeRun{prompt: prompt, dir: repo, env: env, args: append(args, "--resume", first.SessionID)})
	t.Logf("sessions %s, %s", first.SessionID, second.SessionID)

	// The records are written behind the answers: wait until the work
	// report's total is the cost report's and both branches have cost.
	var byBranch ledger.WorkReportPage
	var total string
	settled := testwait.Until(func() bool {
		byBranch = workReport(t, g, "group_by[]=repository&group_by[]=branch")
		total = costCents(t, g)
		var want float64
		_, _ = fmt.Sscan(total, &want)
		return want > 0 && len(byBranch.Data) == 1 && len(byBranch.Data[0].Results) >= 2 &&
			fmt.Sprintf("%.6f", sumAmounts(byBranch.Data[0].Results)) == fmt.Sprintf("%.6f", want)
	})
	if !settled {
		t.Fatalf("work report %+v never summed to the cost report's %s", byBranch, total)
	}
	branches := map[string]ledger.WorkResult{}
	for _, r := range byBranch.Data[0].Results {
		t.Logf("row: unattributed %v repo %v branch %v: %s cents, %d sessions, %d requests", r.Unattributed,
			deref(r.Repository), deref(r.Branch), r.Amount, r.Sessions, r.Requests)
		if r.Unattributed {
			continue
		}
		if deref(r.Repository) != "github.com/acme/shop" {
			t.Errorf("repository %q, want github.com/acme/shop", deref(r.Repository))
		}
		branches[deref(r.Branch)] = r
	}
	for _, b := range []string{"feat/SHOP-12-cart", "fix-login"} {
		if r, ok := branches[b]; !ok || r.Amount == "0.0" || r.Requests == 0 || r.Sessions != 1 {
			t.Errorf("branch %s: %+v", b, r)
		}
	}

	byTicket := workReport(t, g, "group_by[]=ticket")
	var ticketed bool
	for _, r := range byTicket.Data[0].Results {
		if deref(r.Ticket) == "SHOP-12" {
			ticketed = r.Amount == branches["feat/SHOP-12-cart"].Amount
		}
	}
	if !ticketed {
		t.Errorf("no SHOP-12 ticket row with the feature branch's cost: %+v", byTicket.Data[0].Results)
	}

	// GitHub's times are whole seconds: the merge is a moment after the
	// last request, as it would be.
	now := time.Now().UTC().Add(time.Second)
	payload := fmt.Sprintf(`{"action":"closed","number":41,"pull_request":{"number":41,"html_url":"https://github.com/Acme/Shop/pull/41",
"title":"Fix the login","state":"closed","merged":true,"created_at":%q,"updated_at":%q,"merged_at":%q,"closed_at":%q,
"user":{"login":"alice"},"head":{"ref":"fix-login"}},"repository":{"full_name":"Acme/Shop","html_url":"https://github.com/Acme/Shop"}}`,
		now.Add(-time.Minute).Format(time.RFC3339), now.Format(time.RFC3339), now.Format(time.RFC3339), now.Format(time.RFC3339))
	hook := func(sig, delivery string) int {
		st, _, body := g.do(t, "POST", "/hooks/github", "", payload, "X-GitHub-Event", "pull_request", "X-GitHub-Delivery", delivery,
			"X-Hub-Signature-256", sig)
		t.Logf("webhook %s: %d %s", delivery, st, body)
		return st
	}
	mac := hmac.New(sha256.New, []byte(forgeSecret))
	mac.Write([]byte(payload))
	sig := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if st := hook("sha256=00"+sig[9:], "forged-1"); st != http.StatusUnauthorized {
		t.Errorf("forged webhook: %d, want 401", st)
	}
	if st := hook(sig, "delivery-1"); st != http.StatusOK {
		t.Fatalf("signed webhook: %d", st)
	}
	if st := hook(sig, "delivery-1"); st != http.StatusConflict {
		t.Errorf("replayed webhook: %d, want 409", st)
	}
	if st := hook(sig, "delivery-2"); st != http.StatusConflict {
		t.Errorf("replayed body under a new delivery id: %d, want 409", st)
	}

	byPull := workReport(t, g, "group_by[]=pull_request")
	var merged bool
	for _, r := range byPull.Data[0].Results {
		if pr := r.PullRequest; pr != nil {
			merged = pr.Number == 41 && pr.State == "merged" && deref(r.Repository) == "github.com/acme/shop" &&
				r.Amount == branches["fix-login"].Amount
		}
	}
	if !merged || fmt.Sprintf("%.6f", sumAmounts(byPull.Data[0].Results)) != fmt.Sprintf("%.6f", sumAmounts(byBranch.Data[0].Results)) {
		t.Errorf("by pull request: %+v", byPull.Data[0].Results)
	}

	// The CLI names the pull request's cost.
	cost := exec.Command(testbin.Path(t), "modelgate", "cost", "--gateway", g.base, "--pr", "41", "--repo", "https://github.com/Acme/Shop.git", "--days", "1")
	cost.Env = append(os.Environ(), "MODELGATE_ADMIN_KEY="+adminKey)
	out, err := cost.CombinedOutput()
	t.Logf("caddy modelgate cost --pr 41:\n%s", out)
	if err != nil || !strings.Contains(string(out), "#41") || !strings.Contains(string(out), "merged") {
		t.Errorf("cost --pr 41: %v", err)
	}

	log := g.stderr.String()
	reports := fmt.Sprint(byBranch, byPull, byTicket)
	if strings.Contains(log, secret) || strings.Contains(reports, secret) {
		t.Errorf("the remote's credentials reached the log or a report")
	}
	g.stop(t)
	files, _ := filepath.Glob(filepath.Join(g.dir, "ledger.db*"))
	for _, f := range files {
		db, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(db), secret) || strings.Contains(string(db), "bot:") {
			t.Errorf("the remote's credentials reached the ledger file %s", filepath.Base(f))
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
