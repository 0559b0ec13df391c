package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
)

// TestDashboardApprovesAnIncreaseRequest: an admin signed in to the
// dashboard sees the pending increase request with what the person asked
// and why, presses Approve, and the person's limit is what they asked.
func TestDashboardApprovesAnIncreaseRequest(t *testing.T) {
	ctx, problems := browser(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	g := startGateway(t, gatewayConfig{dir: dir, ledgerPath: path, models: "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"})
	s, err := ledger.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r, err := s.(ledger.IncreaseRequestStore).CreateIncreaseRequest(context.Background(), ledger.IncreaseRequest{Person: "dan@example.com",
		Email: "dan@example.com", Groups: []string{"eng"}, Period: "monthly", AmountCents: 7500, Reason: "load tests this week"})
	if err != nil {
		t.Fatal(err)
	}
	var listed string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(g.base+"/ui/"),
		chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.SendKeys("#key", adminKey+kb.Enter, chromedp.ByID),
		chromedp.WaitVisible(`#increase-requests button[data-approve="`+r.ID+`"]`, chromedp.ByQuery),
		chromedp.Text("#increase-requests", &listed, chromedp.ByID),
		chromedp.Click(`#increase-requests button[data-approve="`+r.ID+`"]`, chromedp.ByQuery),
		chromedp.WaitNotPresent(`#increase-requests button[data-approve="`+r.ID+`"]`, chromedp.ByQuery),
	); err != nil {
		t.Fatalf("%v; page problems: %q", err, problems())
	}
	for _, want := range []string{"dan@example.com", "$75.00", "load tests this week"} {
		if !strings.Contains(listed, want) {
			t.Errorf("the requests panel %q lacks %q", listed, want)
		}
	}
	_, _, body := g.do(t, "GET", adminapi.IncreaseRequestsPath+"/"+r.ID, adminKey, "")
	var got adminapi.IncreaseRequest
	if err := json.Unmarshal(body, &got); err != nil || got.Status != "approved" || got.ResolvedBy == nil {
		t.Fatalf("after Approve: %v %s", err, body)
	}
	_, _, body = g.do(t, "GET", adminapi.SpendLimitsPath+"?scope_type[]=user", adminKey, "", "anthropic-beta", adminapi.SpendLimitReadsBeta)
	if !strings.Contains(string(body), `"amount":"7500"`) || !strings.Contains(string(body), `"user_id":"dan@example.com"`) {
		t.Errorf("dan's limit after Approve: %s", body)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("page problems: %q", p)
	}
}
