package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
	g, s := echoGatewayAndLedger(t)
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

// TestChatLinkPageApprovesSignedIn: an approver opens the chat's link in a
// browser; the page shows nothing of the request until they sign in (here
// with the admin key), then shows it, and Approve resolves it in their
// name; the address bar no longer carries the token.
func TestChatLinkPageApprovesSignedIn(t *testing.T) {
	ctx, problems := browser(t)
	g, s := echoGatewayAndLedger(t)
	const secret = "link-secret-for-the-test-0123456789abcdef"
	sum := sha256.Sum256([]byte(secret))
	r, err := s.(ledger.IncreaseRequestStore).CreateIncreaseRequest(context.Background(), ledger.IncreaseRequest{Person: "dan@example.com",
		Email: "dan@example.com", Groups: []string{"eng"}, Period: "monthly", AmountCents: 7500, Reason: "load tests this week",
		CreatedAt: time.Now().UTC(), LinkHash: hex.EncodeToString(sum[:]), LinkExpires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var before, shown, done, location string
	if err := chromedp.Run(ctx,
		chromedp.Navigate(g.base+"/ui/spend-requests/"+r.ID+"?key="+secret),
		chromedp.WaitVisible("#link-key", chromedp.ByID),
		chromedp.Text("main", &before, chromedp.ByQuery),
		chromedp.SendKeys("#link-key", adminKey+kb.Enter, chromedp.ByID),
		chromedp.WaitVisible("#link-approve", chromedp.ByID),
		chromedp.Text("#link-request", &shown, chromedp.ByID),
		chromedp.Location(&location),
		chromedp.Click("#link-approve", chromedp.ByID),
		chromedp.WaitVisible(`//p[@id="link-status"][contains(., "Done")]`, chromedp.BySearch),
		chromedp.Text("#link-status", &done, chromedp.ByID),
	); err != nil {
		t.Fatalf("%v; page problems: %q", err, problems())
	}
	if strings.Contains(before, "dan@example.com") {
		t.Errorf("the page showed the request before a sign-in: %q", before)
	}
	for _, want := range []string{"dan@example.com", "$75.00", "load tests this week"} {
		if !strings.Contains(shown, want) {
			t.Errorf("the request shown %q lacks %q", shown, want)
		}
	}
	if strings.Contains(location, secret) {
		t.Errorf("the address bar still carries the token: %s", location)
	}
	if !strings.Contains(done, "approved") {
		t.Errorf("after Approve: %q", done)
	}
	_, _, body := g.do(t, "GET", adminapi.IncreaseRequestsPath+"/"+r.ID, adminKey, "")
	var got adminapi.IncreaseRequest
	if err := json.Unmarshal(body, &got); err != nil || got.Status != "approved" || got.ResolvedBy == nil || got.ResolvedBy.ScopedAPIKeyID == "chat_link" {
		t.Fatalf("after Approve: %v %s", err, body)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("page problems: %q", p)
	}
}

// echoGatewayAndLedger starts a gateway with an echo model and opens its
// SQLite ledger beside it.
func echoGatewayAndLedger(t *testing.T) (*gateway, ledger.Store) {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "ledger.db")
	g := startGateway(t, gatewayConfig{dir: dir, ledgerPath: path, models: "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"})
	s, err := ledger.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return g, s
}
