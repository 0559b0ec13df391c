package integration

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// alertingGateways is two instances on one fresh PostgreSQL schema,
// priced by models, posting budget alerts to one chat sink.
func alertingGateways(t *testing.T, models func(*upstreams) string) (*chatSink, *gateway, *gateway) {
	t.Helper()
	hook := startChatSink(t)
	dsn, _, _ := freshSchema(t)
	u := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: models(u), ledgerLine: "ledger postgres {env.DATABASE_URL}\n\t\talerts_webhook {env.HOOK}",
		env: []string{"DATABASE_URL=" + dsn.String(), "HOOK=" + hook.URL + "/services/T/B/secret"}}
	return hook, startGateway(t, cfg), startGateway(t, cfg)
}

// TestBudgetReachedWhenLoweredRequestsAreRefused (hostile D5 a): every
// request's output bound is lowered to what is left, and the upstream
// bills less input than the estimate counts (8 tokens, not the body's 59
// bytes), so real spend stops short of the budget: 7.7 cents of 10, with
// 2.3 left and about 3 needed at least. Requests alternate between two
// instances until refused, then both refuse a few more: the team chat
// gets one "Budget reached", which says what was spent and why no
// request fits, and no 80 % alert.
func TestBudgetReachedWhenLoweredRequestsAreRefused(t *testing.T) {
	hook, a, b := alertingGateways(t, dearModels)
	k := createKey(t, a, `{"name":"lowered","budget":{"amount":"10","period":"monthly"}}`)
	waitForKey(t, b, k.Value)
	admitted, refused := 0, 0
	for i := 0; i < 30 && refused < 4; i++ {
		status, h, out := chatAs(t, []*gateway{a, b}[i%2], k.Value, "")
		switch {
		case status == http.StatusTooManyRequests:
			refused++
		case status != 200:
			t.Fatalf("request %d: %d %s", i+1, status, out)
		case refused > 0:
			t.Fatalf("request %d admitted after a refusal", i+1)
		case h.Get("X-Modelgate-Max-Tokens-Lowered") == "":
			t.Errorf("request %d: its bound was not lowered", i+1)
		default:
			admitted++
		}
	}
	if admitted != 7 || refused != 4 {
		t.Fatalf("%d admitted and %d refused; want 7 (7.7 of 10 cents) and 4", admitted, refused)
	}
	wantOnce(t, hook, "Budget reached — api key lowered ("+k.ID+"): $0.07 of $0.10 monthly spent, less left than a request needs (")
	if posts := hook.Posts(); len(posts) != 1 {
		t.Errorf("want only the 100%% alert: %q", posts)
	}
}
