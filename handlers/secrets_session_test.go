package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/secretscan"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestSessionIDThatIsASecret (hostile pass 10, H10-6): a credential sent
// as the session id (X-Session-Id) is recorded, and reported, as the
// firewall's stand-in, never as itself; the same id keeps one stand-in,
// so the session's turns still group; with the firewall off it is kept.
func TestSessionIDThatIsASecret(t *testing.T) {
	fw, err := testFirewall()
	if err != nil {
		t.Fatal(err)
	}
	up := httptest.NewServer(fakes.OpenAI(fakes.Options{}, &fakes.Recorder{}))
	t.Cleanup(up.Close)
	pat := secrettest.Corpus(5)[8].Value
	var events []secretscan.Event
	g, rec := testGateway(t, "model_list:\n"+entry("m", up.URL)+"    secrets: {action: redact}\n"+entry("plain", up.URL)+"    secrets: {action: off}\n",
		func(o *GatewayOptions) {
			o.Secrets = fw
			o.SecretEvents = func(e secretscan.Event) { events = append(events, e) }
		})
	for range 2 {
		if rr := post(g, alice, "/v1/chat/completions", chatBody("m", false), "X-Session-Id", pat); rr.Code != http.StatusOK {
			t.Fatalf("%d %s", rr.Code, rr.Body)
		}
	}
	if rr := post(g, alice, "/v1/chat/completions", chatBody("plain", false), "X-Session-Id", pat); rr.Code != http.StatusOK {
		t.Fatalf("%d %s", rr.Code, rr.Body)
	}
	rec.mu.Lock()
	done := append(rec.done[:0:0], rec.done...)
	rec.mu.Unlock()
	if len(done) != 3 {
		t.Fatalf("records %d", len(done))
	}
	first := done[0].SessionID
	if strings.Contains(first, pat) || !strings.HasPrefix(first, "redacted-github-pat-") || done[1].SessionID != first {
		t.Fatalf("recorded session ids %q, %q", first, done[1].SessionID)
	}
	if done[2].SessionID != pat {
		t.Fatalf("with the firewall off: %q", done[2].SessionID)
	}
	if len(events) != 2 || events[0].Rule != "github-pat" || events[0].SessionID != first || events[0].Location.Path != "session id" {
		t.Fatalf("events %+v", events)
	}
}
