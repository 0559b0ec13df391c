package handlers

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/policy"
)

// gzipResponses is a Responses body for model whose input is n bytes of
// '0', gzipped (n = 3 MiB is about 3 KB on the wire).
func gzipResponses(model string, n int) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write([]byte(`{"model":"` + model + `","max_output_tokens":10,"input":"`))
	zw.Write(bytes.Repeat([]byte("0"), n))
	zw.Write([]byte(`"}`))
	zw.Close()
	return b.Bytes()
}

// gatedUpstream is the OpenAI fake behind a gate: requests wait at it
// until the test opens it, so they overlap.
func gatedUpstream(t *testing.T) (url string, arrived func() int, open func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	n := 0
	fake := fakes.OpenAI(fakes.Options{}, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		mu.Unlock()
		<-gate
		fake.ServeHTTP(w, r)
	}))
	open = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(srv.Close)
	t.Cleanup(open)
	return srv.URL, func() int { mu.Lock(); defer mu.Unlock(); return n }, open
}

// TestResponsesWorkingSetCounted: a Responses request counts its working
// set, not only its body, against max_body_memory (hostile review N7).
// Three concurrent gzipped bodies that each inflate to 3 MiB, on a
// gateway with 48 MiB of body memory: one is served, the others get 503
// body_memory_full instead of each holding a dozen copies of its input
// outside the bound; all memory is given back at the end.
func TestResponsesWorkingSetCounted(t *testing.T) {
	base, arrived, open := gatedUpstream(t)
	g, _ := testGateway(t, "model_list:\n"+entry("paid", base, "responses_api: translate"), func(o *GatewayOptions) {
		o.MaxRequestBody = 4 << 20
		o.BodyMemory = 48 << 20
		o.BodyMemoryWait = 100 * time.Millisecond
	})
	oneServedOfThree(t, g, arrived, open, "/v1/responses", gzipResponses("paid", 3<<20), func(rec *httptest.ResponseRecorder) bool {
		return strings.Contains(rec.Body.String(), "body_memory_full")
	})
}

// oneServedOfThree sends path three concurrent gzipped bodies on g (48
// MiB of body memory) and checks that one reaches the gated upstream and
// is served while the others are refused, each as refusedOK says, and
// that all body memory is given back at the end.
func oneServedOfThree(t *testing.T, g *Gateway, arrived func() int, open func(), path string, body []byte, refusedOK func(*httptest.ResponseRecorder) bool) {
	t.Helper()
	codes := make(chan *httptest.ResponseRecorder, 3)
	for range 3 {
		go func() {
			req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
			req.Header.Set("Content-Encoding", "gzip")
			req = req.WithContext(policy.WithIdentity(req.Context(), alice))
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, req)
			codes <- rec
		}()
	}
	// The refused ones answer while the served one waits at the gate;
	// without the bound all three would wait there.
	var refused []*httptest.ResponseRecorder
	deadline := time.After(3 * time.Second)
wait:
	for len(refused) < 2 {
		select {
		case rec := <-codes:
			refused = append(refused, rec)
		case <-deadline:
			break wait
		}
	}
	// The one served reaches the upstream (bounded wait), and only it.
	for until := time.Now().Add(3 * time.Second); arrived() == 0 && time.Now().Before(until); {
		time.Sleep(5 * time.Millisecond)
	}
	if arrived() != 1 {
		t.Errorf("%d requests reached the upstream, want 1", arrived())
	}
	open()
	for _, rec := range refused {
		if rec.Code != http.StatusServiceUnavailable || !refusedOK(rec) {
			t.Errorf("an overlapping request: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
		}
	}
	if len(refused) != 2 {
		t.Errorf("%d requests refused, want 2", len(refused))
	}
	if rec := <-codes; rec.Code != http.StatusOK {
		t.Errorf("the request that had room: %d %s", rec.Code, rec.Body.String())
	}
	used, peak, _ := g.bodyMem.stats()
	if used != 0 || peak > 48<<20 {
		t.Errorf("body memory after the requests: %d held, peak %d, want 0 and at most %d", used, peak, 48<<20)
	}
}

// TestResponsesWebSocketMessageBounded: a WebSocket message is read into
// body memory as an HTTP body is, its inflated size included: a
// permessage-deflate frame that inflates past max_request_body closes
// the connection with 1009, and a message that finds no body memory is
// answered with a 503 error event and the connection goes on.
func TestResponsesWebSocketMessageBounded(t *testing.T) {
	g, _ := testGateway(t, echoModels, func(o *GatewayOptions) {
		o.MaxRequestBody = 4 << 20
		o.BodyMemory = 10 << 20
		o.BodyMemoryWait = 50 * time.Millisecond
	})
	url := wsGateway(t, g, newFlipResolver())
	dial := func() *websocket.Conn {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{CompressionMode: websocket.CompressionContextTakeover,
			HTTPHeader: http.Header{"Authorization": {"Bearer sk-ws-test-key"}}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c := dial()
	big := `{"type":"response.create","model":"offline","input":"` + strings.Repeat("0", 5<<20) + `"}`
	if err := c.Write(ctx, websocket.MessageText, []byte(big)); err != nil {
		t.Fatal(err)
	}
	if ce, _ := closeOf(t, c, 5*time.Second); ce.Code != websocket.StatusMessageTooBig {
		t.Errorf("a frame inflating past max_request_body: closed with %d %q, want 1009", ce.Code, ce.Reason)
	}

	// Another request holds the body memory: a message finds none.
	held := g.bodyMem.max - (1 << 20)
	if !g.bodyMem.acquire(ctx, held, time.Now()) {
		t.Fatal("could not take the body memory")
	}
	c = dial()
	msg := `{"type":"response.create","model":"offline","store":false,"input":"` + strings.Repeat("0", 3<<20) + `"}`
	got, err := wsTurnDone(t, c, msg)
	if err != nil || !strings.Contains(got, `"status":503`) || !strings.Contains(got, "request bodies at once") {
		t.Errorf("a message without body memory: %s %v", got, err)
	}
	g.bodyMem.release(held)
	if got, err := wsTurnDone(t, c, echoTurn); err != nil || got != "response.completed" {
		t.Errorf("the next turn once memory is free: %q %v", got, err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	// Every message's share, and the connection's last turn, come back.
	deadline := time.Now().Add(2 * time.Second)
	for {
		used, _, _ := g.bodyMem.stats()
		if used == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d bytes of body memory still held after the connections closed", used)
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}

// TestResponsesPeakHeap reports what one large Responses request raises
// the heap by, the measurement behind responsesWorkingSet.
func TestResponsesPeakHeap(t *testing.T) {
	if testing.Short() {
		t.Skip("measures the heap")
	}
	base, _, open := gatedUpstream(t)
	open()
	g, _ := testGateway(t, "model_list:\n"+entry("paid", base, "responses_api: translate"), nil)
	body := `{"model":"paid","max_output_tokens":10,"input":"` + strings.Repeat("0", 8<<20) + `"}`
	runtime.GC()
	before := heapObjects()
	stop, peak := make(chan struct{}), make(chan uint64)
	go func() {
		var p uint64
		for {
			p = max(p, heapObjects())
			select {
			case <-stop:
				peak <- p
				return
			case <-time.After(200 * time.Microsecond):
			}
		}
	}()
	rec := post(g, alice, "/v1/responses", body)
	close(stop)
	if rec.Code != http.StatusOK {
		t.Fatalf("%d %s", rec.Code, rec.Body.String())
	}
	grew := (<-peak - before) >> 20
	t.Logf("an 8 MiB Responses input raised the heap by %d MiB at its peak (%.1f× the input)", grew, float64(grew)/8)
	// The peak includes garbage the collector had not reached yet, which
	// varies from run to run: only a peak well past the count fails.
	if grew > responsesWorkingSet*8*3/2 {
		t.Errorf("the heap grew by %d MiB, far more than responsesWorkingSet (%d) × the input: raise it", grew, responsesWorkingSet)
	}
}

func heapObjects() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestConverseWorkingSetCounted: a Converse body is parsed whole, as a
// Responses one is, and counts its working set against max_body_memory:
// three concurrent gzipped bodies that inflate to 3 MiB of content blocks
// each, on 48 MiB of body memory, are one served and two refused with 503
// body_memory_full, rather than each decoding ~40 times its size outside
// the bound.
func TestConverseWorkingSetCounted(t *testing.T) {
	base, arrived, open := gatedUpstream(t)
	g, _ := testGateway(t, "model_list:\n"+entry("paid", base), func(o *GatewayOptions) {
		o.MaxRequestBody = 4 << 20
		o.BodyMemory = 48 << 20
		o.BodyMemoryWait = 100 * time.Millisecond
	})
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.Write([]byte(`{"messages":[{"role":"user","content":[{"text":"hi"}`))
	zw.Write(bytes.Repeat([]byte(`,{}`), 1<<20))
	zw.Write([]byte(`]}],"inferenceConfig":{"maxTokens":10}}`))
	zw.Close()
	oneServedOfThree(t, g, arrived, open, "/model/paid/converse", zb.Bytes(), func(rec *httptest.ResponseRecorder) bool {
		return rec.Header().Get("X-Amzn-Errortype") != ""
	})
}

// TestCompactBodyBounded: /v1/responses/compact reads its body as every
// other endpoint does: a gzipped body is decoded (and compacts), one that
// inflates past max_request_body is a 413 that reaches no upstream, and
// no body memory stays held.
func TestCompactBodyBounded(t *testing.T) {
	base, arrived, open := gatedUpstream(t)
	open()
	g, _ := testGateway(t, "model_list:\n"+entry("paid", base, "responses_api: translate"), func(o *GatewayOptions) {
		o.MaxRequestBody = 1 << 20
	})
	post := func(body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/responses/compact", bytes.NewReader(body))
		req.Header.Set("Content-Encoding", "gzip")
		req = req.WithContext(policy.WithIdentity(req.Context(), &policy.Identity{KeyID: "k"}))
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		return rec
	}
	if rec := post(gzipResponses("paid", 1000)); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "compaction") {
		t.Fatalf("gzipped compact: %d %s", rec.Code, rec.Body)
	}
	before := arrived()
	if rec := post(gzipResponses("paid", 3<<20)); rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("compact inflating past the limit: %d %s", rec.Code, rec.Body)
	}
	if arrived() != before {
		t.Fatal("a compact past the body limit reached the upstream")
	}
	if held, _, _ := g.bodyMem.stats(); held != 0 {
		t.Fatalf("body memory still held after compact: %d", held)
	}
}
