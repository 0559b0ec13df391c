package handlers

import (
	"context"
	"errors"
	"fmt"
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

// serveAlice serves one POST of alice's, hdr in pairs, into w.
func serveAlice(g *Gateway, w http.ResponseWriter, path, body string, hdr []string) {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	g.ServeHTTP(w, req.WithContext(policy.WithIdentity(req.Context(), alice)))
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
			c.client = httptest.NewRecorder()
			serveAlice(g, c.client, tc.path, tc.body, tc.hdr)
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

// handingBackCommitter is a ledger whose database fails: every Commit
// hands its record back (ledger.ErrHandedBack), and what the request then
// records is enqueued.
type handingBackCommitter struct {
	recorder
	mu     sync.Mutex
	queued []ledger.Record
}

func (c *handingBackCommitter) Commit(context.Context, ledger.Record) error {
	return fmt.Errorf("%w: %w", ledger.ErrHandedBack, errors.New("dial tcp: connection refused"))
}

func (c *handingBackCommitter) Enqueue(r ledger.Record) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.queued = append(c.queued, r)
	return true
}

// TestDurableAnswerWithoutItsRecordIsRefused (hostile review N13): the
// request that meets the outage, its upstream answer in hand, is not
// answered as a success once the ledger hands its record back: a JSON
// answer becomes a 503 in the client's family, a stream gets an error
// event in place of its end; the request is recorded as that refusal,
// with the usage the upstream reported.
func TestDurableAnswerWithoutItsRecordIsRefused(t *testing.T) {
	up := newFakeUpstream(t, "m", nil)
	for _, tc := range []struct {
		name, path, body, end string
		status                int
		hdr                   []string
	}{
		{"openai json", "/v1/chat/completions", chatBody("m", false), "", http.StatusServiceUnavailable, nil},
		{"openai stream", "/v1/chat/completions", chatBody("m", true), "[DONE]", http.StatusOK, nil},
		{"anthropic stream", "/v1/messages", `{"model":"m","max_tokens":9,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop", http.StatusOK, []string{"Anthropic-Version", "2023-06-01"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &handingBackCommitter{}
			g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) {
				o.Recorder, o.Durable = c, true
			})
			rec := httptest.NewRecorder()
			serveAlice(g, rec, tc.path, tc.body, tc.hdr)
			body := rec.Body.String()
			if rec.Code != tc.status || !strings.Contains(body, "ledger_unavailable") && !strings.Contains(body, "usage ledger cannot be written") {
				t.Fatalf("%d %s: want %d and the ledger's refusal", rec.Code, body, tc.status)
			}
			if tc.end != "" && strings.Contains(body, tc.end) {
				t.Fatalf("the stream's end reached the client unrecorded: %s", body)
			}
			if len(c.queued) != 1 || c.queued[0].Status != http.StatusServiceUnavailable || c.queued[0].Outcome != ledger.OutcomeError ||
				c.queued[0].OutputTokens == 0 {
				t.Fatalf("recorded %+v, want one refusal (503, error) with the upstream's usage", c.queued)
			}
		})
	}
}
