package integration

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/modelgate/modelgate/internal/testwait"
)

// TestDashboardPullRequestCost: a client without hooks names its work in
// the X-Modelgate-Repo and X-Modelgate-Branch headers (a remote URL with
// credentials, normalised); two branches' pull requests are merged by
// signed webhooks; the dashboard's pull request view shows the median,
// the top ten with each one's cost, and the weekly trend, in a real
// browser.
func TestDashboardPullRequestCost(t *testing.T) {
	ctx, problems := browser(t)
	g := startGateway(t, gatewayConfig{
		models: "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n    model_info:\n      input_cost_per_token: 0.001\n      output_cost_per_token: 0.001\n",
		// Caddy's access log prints the request's headers as they came:
		// the filter Caddyfile.example sets keeps the repository header's
		// credentials out of it.
		siteExtra: "log {\n\t\tformat filter {\n\t\t\trequest>headers>X-Modelgate-Repo delete\n\t\t}\n\t}\n\tllm_forge {\n\t\tgithub_secret {env.FORGE_SECRET}\n\t}",
		env:       []string{"FORGE_SECRET=" + forgeSecret},
	})
	ask := func(session, branch string, n int) {
		for i := range n {
			st, _, body := g.do(t, "POST", "/v1/messages", aliceKey,
				fmt.Sprintf(`{"model":"echo","max_tokens":50,"messages":[{"role":"user","content":"work %d on %s"}]}`, i, branch),
				"X-Claude-Code-Session-Id", session, "X-Modelgate-Repo", "https://ci:glpat-SECRET@github.com/Acme/Web.git", "X-Modelgate-Branch", branch)
			if st != http.StatusOK {
				t.Fatalf("request: %d %s", st, body)
			}
		}
	}
	ask("sess-small", "fix-typo", 1)
	ask("sess-big", "feat/WEB-3-search", 4)

	merge := func(number int, branch, title string) {
		now := time.Now().UTC().Add(2 * time.Second).Format(time.RFC3339)
		payload := fmt.Sprintf(`{"action":"closed","pull_request":{"number":%d,"html_url":"https://github.com/acme/web/pull/%d","title":%q,"state":"closed",
"merged":true,"created_at":%q,"updated_at":%q,"merged_at":%q,"closed_at":%q,"user":{"login":"alice"},"head":{"ref":%q}},
"repository":{"html_url":"https://github.com/acme/web"}}`, number, number, title, now, now, now, now, branch)
		mac := hmac.New(sha256.New, []byte(forgeSecret))
		mac.Write([]byte(payload))
		st, _, body := g.do(t, "POST", "/hooks/github", "", payload, "X-GitHub-Event", "pull_request",
			"X-GitHub-Delivery", fmt.Sprint("d-", number), "X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		if st != http.StatusOK {
			t.Fatalf("webhook: %d %s", st, body)
		}
	}
	// The records are written behind the answers: merge once both
	// branches' spend is in the work report.
	if !testwait.Until(func() bool {
		p := workReport(t, g, "group_by[]=branch")
		return len(p.Data) == 1 && len(p.Data[0].Results) == 2 && !p.Data[0].Results[0].Unattributed && !p.Data[0].Results[1].Unattributed
	}) {
		t.Fatalf("the header contexts never attributed both branches: %+v", workReport(t, g, "group_by[]=branch"))
	}
	merge(7, "fix-typo", "Fix a typo")
	merge(8, "feat/WEB-3-search", "Search")

	var median, top, trend string
	err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/#pulls"), chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.SendKeys("#key", adminKey+kb.Enter, chromedp.ByID), chromedp.WaitVisible("#pr-median", chromedp.ByID),
		chromedp.Text("#pr-median", &median, chromedp.ByID), chromedp.Text("#pr-top", &top, chromedp.ByID),
		chromedp.Text("#pr-trend", &trend, chromedp.ByID))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("median %q\ntop %q\ntrend %q", median, top, trend)
	big := strings.Index(top, "#8 Search")
	small := strings.Index(top, "#7 Fix a typo")
	if big < 0 || small < 0 || big > small || !strings.HasPrefix(median, "$") || !strings.Contains(trend, "2") {
		t.Errorf("pull request view: median %q, top %q, trend %q", median, top, trend)
	}
	if strings.Contains(top, "SECRET") || strings.Contains(g.stderr.String(), "glpat-SECRET") {
		t.Error("the header's credentials reached the dashboard or the log")
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("browser problems: %v", p)
	}
}
