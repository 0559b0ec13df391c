package handlers

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// orderingCommitter notes what the client had received when each record
// was committed.
type orderingCommitter struct {
	recorder
	mu       sync.Mutex
	client   *httptest.ResponseRecorder
	seen     []string // the client's body at each commit
	enqueued int
}

func (c *orderingCommitter) Commit(_ context.Context, rec ledger.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seen = append(c.seen, c.client.Body.String())
	return nil
}

func (c *orderingCommitter) Enqueue(ledger.Record) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.enqueued++
	return true
}

// TestDurableRecordsBeforeTheAnswerEnds: under durability sync the record
// of a successful request is committed before the client has the end of
// its answer: no body at all for a JSON answer, and everything but the
// final events for a stream. Each request is recorded once.
func TestDurableRecordsBeforeTheAnswerEnds(t *testing.T) {
	up := newFakeUpstream(t, "m", nil)
	for _, tc := range []struct {
		name, path, body, end string
		hdr                   []string
	}{
		{"openai json", "/v1/chat/completions", chatBody("m", false), "", nil},
		{"openai stream", "/v1/chat/completions", chatBody("m", true), "[DONE]", nil},
		{"anthropic stream", "/v1/messages", `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop", []string{"Anthropic-Version", "2023-06-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &orderingCommitter{}
			g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) {
				o.Recorder, o.Durable = c, true
			})
			req := httptest.NewRequest(http.MethodPost, tc.path, strings.NewReader(tc.body))
			for i := 0; i+1 < len(tc.hdr); i += 2 {
				req.Header.Set(tc.hdr[i], tc.hdr[i+1])
			}
			req = req.WithContext(policy.WithIdentity(req.Context(), alice))
			c.client = httptest.NewRecorder()
			g.ServeHTTP(c.client, req)
			if c.client.Code != http.StatusOK {
				t.Fatalf("%d %s", c.client.Code, c.client.Body.String())
			}
			if len(c.seen) != 1 || c.enqueued != 0 {
				t.Fatalf("%d commits and %d enqueues, want one commit", len(c.seen), c.enqueued)
			}
			at := c.seen[0]
			if tc.end == "" && at != "" {
				t.Fatalf("the client had %q before the record was written", at)
			}
			if tc.end != "" && (strings.Contains(at, tc.end) || !strings.Contains(c.client.Body.String(), tc.end) || !strings.Contains(at, "hello from m")) {
				t.Fatalf("at commit the client had %q; in the end %q", at, c.client.Body.String())
			}
		})
	}
}

// TestDurableRefusesWhileLedgerDown: under durability sync, while the
// ledger is known to fail, a request gets a 503 with Retry-After in its
// client's family at once, reaches no upstream and commits nothing;
// when the ledger is back it is served and committed. Async gateways
// serve through the outage.
func TestDurableRefusesWhileLedgerDown(t *testing.T) {
	up := newFakeUpstream(t, "m", nil)
	var down error = ledger.ErrLedgerUnhealthy
	c := &orderingCommitter{}
	g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) {
		o.Recorder, o.Durable = c, true
		o.LedgerDown = func() error { return down }
	})
	c.client = httptest.NewRecorder()
	serve := func(g *Gateway, path, body string, hdr ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req.WithContext(policy.WithIdentity(req.Context(), alice)))
		return rec
	}
	calls := up.hits.Load()
	rec := serve(g, "/v1/chat/completions", chatBody("m", true))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), `"code":"ledger_unavailable"`) {
		t.Fatalf("openai while down: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	rec = serve(g, "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`, "Anthropic-Version", "2023-06-01")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" ||
		!strings.Contains(rec.Body.String(), `"type":"overloaded_error"`) && !strings.Contains(rec.Body.String(), `"type":"api_error"`) {
		t.Fatalf("anthropic while down: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	if up.hits.Load() != calls || len(c.seen) != 0 || c.enqueued != 0 {
		t.Fatalf("while down: %d upstream calls, %d commits, %d enqueued", up.hits.Load()-calls, len(c.seen), c.enqueued)
	}
	down = nil
	if rec := serve(g, "/v1/chat/completions", chatBody("m", false)); rec.Code != http.StatusOK || len(c.seen) != 1 {
		t.Fatalf("after recovery: %d %s, %d commits", rec.Code, rec.Body.String(), len(c.seen))
	}

	// The async default serves through the outage; its records queue.
	down = ledger.ErrLedgerUnhealthy
	async, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) {
		o.LedgerDown = func() error { return down }
	})
	if rec := serve(async, "/v1/chat/completions", chatBody("m", false)); rec.Code != http.StatusOK {
		t.Fatalf("async while down: %d %s", rec.Code, rec.Body.String())
	}
}
