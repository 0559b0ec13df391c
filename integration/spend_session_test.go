package integration

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testwait"
)

// TestSessionSpendLimit: through the binary, a session-scoped limit set
// with the Spend Limits API caps each coding-agent session (the 429 names
// the session), not the key: another session of the key is served; an
// explicit no-limit for the refused session's id, of alice's key, lets
// it go on.
func TestSessionSpendLimit(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: dearModels(u)})
	if st, _, body := g.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey, `{"amount":"5","scope":{"type":"session"}}`); st != http.StatusOK ||
		!strings.Contains(string(body), `"period":"total","scope":{"type":"session"}`) {
		t.Fatalf("setting every session's limit: %d %s", st, body)
	}
	if !testwait.Until(func() bool {
		_, _, me := g.do(t, http.MethodGet, "/v1/me", aliceKey, "", "X-Claude-Code-Session-Id", "session-one")
		return strings.Contains(string(me), `"scope":"session","period":"total","amount":"5"`)
	}) {
		t.Fatal("the session limit never reached admission")
	}
	_, body := untilRefused(t, g, aliceKey, "session-one")
	_, rest, _ := strings.Cut(string(body), "budget exceeded for session ")
	session, _, found := strings.Cut(rest, " of key alice")
	if !found || session == "" {
		t.Fatalf("the refusal does not name the session: %s", body)
	}
	if st, _, body := chatAs(t, g, aliceKey, "session-two"); st != http.StatusOK {
		t.Errorf("another session of the key: %d %s", st, body)
	}
	if st, _, body := g.do(t, http.MethodPost, adminapi.SpendLimitsPath, adminKey,
		`{"amount":null,"scope":{"type":"session","api_key_id":"alice","session_id":`+strconv.Quote(session)+`}}`); st != http.StatusOK {
		t.Fatalf("exempting the session: %d %s", st, body)
	}
	if !testwait.Until(func() bool {
		st, _, _ := chatAs(t, g, aliceKey, "session-one")
		return st == http.StatusOK
	}) {
		t.Error("the exempted session was never served again")
	}
}
