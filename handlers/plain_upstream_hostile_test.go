package handlers

// The gateway over a plain-HTTP upstream (a local inference server), which
// upstream's plainTransport carries on kept-alive connections of its own:
// stalls, timeouts, client disconnects, restarts, error answers and
// concurrent cancels must each end on the right wire answer and ledger
// record, and never leave a connection in the pool that would hand one
// request another's answer.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// plainUp is a scripted local server that names the request it answers:
// the marker is the request's first message.
type plainUp struct {
	srv    *httptest.Server
	opened atomic.Int64 // connections accepted
	closed atomic.Int64 // connections closed
	ended  chan string  // markers of requests whose connection the gateway closed
}

type plainScript func(w http.ResponseWriter, r *http.Request, marker string, stream bool)

func newPlainUp(t *testing.T, f plainScript) *plainUp {
	t.Helper()
	u := &plainUp{ended: make(chan string, 1024)}
	u.srv = httptest.NewUnstartedServer(plainHandler(f))
	u.srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		switch s {
		case http.StateNew:
			u.opened.Add(1)
		case http.StateClosed, http.StateHijacked:
			u.closed.Add(1)
		}
	}
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

func plainHandler(f plainScript) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v struct {
			Stream   bool `json:"stream"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		body, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(body, &v)
		marker := ""
		if len(v.Messages) > 0 {
			marker = v.Messages[len(v.Messages)-1].Content
		}
		f(w, r, marker, v.Stream)
	})
}

// waitEnded waits for the upstream to see the request marked m end.
func (u *plainUp) waitEnded(t *testing.T, m string) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		select {
		case got := <-u.ended:
			if got == m {
				return
			}
		case <-deadline:
			t.Fatalf("the upstream never saw request %q end", m)
		}
	}
}

// hold keeps the request open until the gateway closes it.
func (u *plainUp) hold(r *http.Request, marker string) {
	<-r.Context().Done()
	u.ended <- marker
}

// answer is the good answer naming marker, whole or streamed in parts.
func answer(w http.ResponseWriter, marker string, stream bool) {
	if stream {
		streamStart(w, marker+"|a")
		streamChunk(w, marker+"|b", false)
		streamChunk(w, "", true)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, marker)
}

func markedBody(alias, marker string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":%q}]}`, alias, stream, marker)
}

// checkOwn fails unless the client's answer is the good one for marker
// and names no other request.
func checkOwn(t *testing.T, code int, body, marker string, stream bool) {
	t.Helper()
	if code != 200 {
		t.Fatalf("%s: status %d: %s", marker, code, body)
	}
	if stream {
		if !strings.Contains(body, marker+"|a") || !strings.Contains(body, marker+"|b") || !strings.Contains(body, "[DONE]") ||
			strings.Count(body, "|") != 2 {
			t.Fatalf("%s: stream is not its own, whole: %s", marker, body)
		}
		return
	}
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil || len(v.Choices) != 1 || v.Choices[0].Message.Content != marker {
		t.Fatalf("%s: answer is not its own: %s", marker, body)
	}
}

// nthRecord waits for the n-th ledger record.
func nthRecord(t *testing.T, obs *recorder, n int) ledger.Record {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(obs.Records()) < n && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	recs := obs.Records()
	if len(recs) < n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	return recs[n-1]
}

// serveGateway puts g behind a real server, as Caddy would, so that a
// client can leave mid-answer.
func serveGateway(t *testing.T, g *Gateway) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.ServeHTTP(w, r.WithContext(policy.WithIdentity(r.Context(), alice)))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A stream that stalls past stream_timeout ends in a stream error, a 504
// error record, and a closed connection: the next requests, streamed or
// not, each get their own answer, even though the stalled server wakes up
// and writes the rest of its stream late.
func TestPlainUpstreamStallMidStream(t *testing.T) {
	var up *plainUp
	wroteLate := make(chan string, 3) // stalled handlers that have written their late part
	up = newPlainUp(t, func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
		if strings.HasPrefix(m, "stall") {
			streamStart(w, m+"|a")
			select {
			case <-r.Context().Done():
				up.ended <- m
			case <-time.After(400 * time.Millisecond):
			}
			// Late: the rest of the stream, for a connection nobody
			// should still be reading.
			streamChunk(w, m+"|late", false)
			streamChunk(w, "", true)
			wroteLate <- m
			return
		}
		answer(w, m, stream)
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL, "stream_timeout: 0.15"), nil)
	n := 0
	for i := 0; i < 3; i++ {
		m := fmt.Sprintf("stall-%d", i)
		rec := post(g, alice, "/v1/chat/completions", markedBody("m", m, true))
		n++
		body := rec.Body.String()
		if rec.Code != 200 || !strings.Contains(body, m+"|a") || !strings.Contains(body, "paused longer than 150ms") ||
			strings.Contains(body, "late") || strings.Contains(body, "[DONE]") {
			t.Fatalf("stalled stream: %d %s", rec.Code, body)
		}
		if r := nthRecord(t, obs, n); r.Status != 504 || r.Outcome != ledger.OutcomeError || r.Latency < 150*time.Millisecond {
			t.Fatalf("stalled stream record: status %d outcome %q latency %s", r.Status, r.Outcome, r.Latency)
		}
		up.waitEnded(t, m)
		for j, stream := range []bool{true, false, true} {
			m := fmt.Sprintf("good-%d-%d", i, j)
			rec := post(g, alice, "/v1/chat/completions", markedBody("m", m, stream))
			n++
			checkOwn(t, rec.Code, rec.Body.String(), m, stream)
			if r := nthRecord(t, obs, n); r.Status != 200 || r.Outcome != ledger.OutcomeOK {
				t.Fatalf("%s record: %+v", m, r)
			}
		}
	}
	// Once every stalled handler has written late, a fresh round must
	// not see it.
	testwait.Receive(t, "every stalled handler wrote late", wroteLate, 3)
	for j, stream := range []bool{false, true} {
		m := fmt.Sprintf("after-%d", j)
		rec := post(g, alice, "/v1/chat/completions", markedBody("m", m, stream))
		checkOwn(t, rec.Code, rec.Body.String(), m, stream)
	}
}

// The attempt timeout expiring before the headers is a 504 in the
// client's format, and with another deployment the request moves on to
// it; the timed-out connection is closed, and when the slow server
// recovers its next answers are its own.
func TestPlainUpstreamTimeoutBeforeHeaders(t *testing.T) {
	var slowMode atomic.Bool
	slowMode.Store(true)
	var slowStarted, slowDone atomic.Int64 // slow-mode answers begun and returned
	var slow *plainUp
	slow = newPlainUp(t, func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
		if slowMode.Load() {
			slowStarted.Add(1)
			defer slowDone.Add(1)
			select {
			case <-r.Context().Done():
				slow.ended <- m
				return
			case <-time.After(time.Second):
			}
			// Late answer on a connection the gateway gave up on.
			answer(w, m+"-late", stream)
			return
		}
		answer(w, "slow:"+m, stream)
	})
	good := newPlainUp(t, func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
		answer(w, "good:"+m, stream)
	})
	yaml := "model_list:\n" + entry("m", slow.srv.URL, "timeout: 0.15") + entry("n", good.srv.URL) +
		entry("s", slow.srv.URL, "timeout: 0.15") + "router_settings:\n  fallbacks:\n    - m: [n]\n"
	g, obs := testGateway(t, yaml, nil)

	for i, stream := range []bool{false, true} {
		m := fmt.Sprintf("fb-%d", i)
		rec := post(g, alice, "/v1/chat/completions", markedBody("m", m, stream))
		checkOwn(t, rec.Code, rec.Body.String(), "good:"+m, stream)
		slow.waitEnded(t, m)
	}
	timeouts := 0
	for _, a := range obs.Attempts() {
		if a.Deployment == g.backends["m"][0].Entry().ID && a.Err == "timeout" && a.Retrying {
			timeouts++
		}
	}
	if timeouts != 2 {
		t.Errorf("attempts = %+v, want two timeouts on the slow deployment, retried", obs.Attempts())
	}

	// No other deployment: the client gets the 504 in its own format.
	rec := post(g, alice, "/v1/messages", `{"model":"s","max_tokens":10,"messages":[{"role":"user","content":"anth-1"}]}`)
	var ae struct {
		Type  string
		Error struct{ Type, Message string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &ae); rec.Code != 504 || err != nil || ae.Type != "error" || !strings.Contains(ae.Error.Message, "did not answer within 150ms") {
		t.Fatalf("anthropic timeout: %d %s", rec.Code, rec.Body)
	}
	slow.waitEnded(t, "anth-1")
	rec = post(g, alice, "/v1/chat/completions", markedBody("s", "oai-1", true))
	if rec.Code != 504 || !strings.Contains(errMessage(t, rec.Body.Bytes()), "did not answer within 150ms") {
		t.Fatalf("openai stream timeout: %d %s", rec.Code, rec.Body)
	}
	slow.waitEnded(t, "oai-1")
	if r := obs.Records(); r[len(r)-1].Status != 504 || r[len(r)-1].Outcome != ledger.OutcomeError {
		t.Fatalf("timeout record: %+v", r[len(r)-1])
	}

	slowMode.Store(false)
	for i, stream := range []bool{false, true, false, true} {
		m := fmt.Sprintf("rec-%d", i)
		rec := post(g, alice, "/v1/chat/completions", markedBody("s", m, stream))
		checkOwn(t, rec.Code, rec.Body.String(), "slow:"+m, stream)
	}
	// Late answers written to the dropped connections reach nobody: once
	// every slow-mode answer has returned (written late or seen its
	// connection close), nothing more can come.
	if !testwait.Until(func() bool { return slowDone.Load() == slowStarted.Load() }) {
		t.Fatalf("%d of %d slow-mode answers never returned", slowStarted.Load()-slowDone.Load(), slowStarted.Load())
	}
	for i, stream := range []bool{true, false} {
		m := fmt.Sprintf("rec2-%d", i)
		rec := post(g, alice, "/v1/chat/completions", markedBody("s", m, stream))
		checkOwn(t, rec.Code, rec.Body.String(), "slow:"+m, stream)
	}
}

// A client that leaves mid-stream ends the upstream request (the local
// server sees it end), leaves a cancelled 499 record, and leaks neither
// goroutines nor connections over many such departures.
func TestPlainUpstreamClientDisconnectMidStream(t *testing.T) {
	var up *plainUp
	arrived := make(chan string, 1) // an early request the upstream holds, unanswered
	up = newPlainUp(t, func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
		if strings.HasPrefix(m, "leave") {
			streamStart(w, m+"|a")
			up.hold(r, m)
			return
		}
		if strings.HasPrefix(m, "early") {
			arrived <- m
			up.hold(r, m)
			return
		}
		answer(w, m, stream)
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), nil)
	srv := serveGateway(t, g)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()

	run := func(i int) {
		m := fmt.Sprintf("leave-%d", i)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(markedBody("m", m, true)))
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.Contains(line, m+"|a") {
			t.Fatalf("first line %q: %v", line, err)
		}
		cancel()
		resp.Body.Close()
		up.waitEnded(t, m)
		// The next request on the same server gets its own answer.
		g := fmt.Sprintf("after-%d", i)
		resp, err = client.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(markedBody("m", g, i%2 == 0)))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkOwn(t, resp.StatusCode, string(b), g, i%2 == 0)
	}
	// A client that leaves before the upstream has answered at all.
	early := func(i int) {
		m := fmt.Sprintf("early-%d", i)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(markedBody("m", m, i%2 == 0)))
		go func() {
			// The client leaves once the upstream holds its request.
			select {
			case <-arrived:
			case <-time.After(testwait.Bound): // waitEnded below fails
			}
			cancel()
		}()
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			t.Fatalf("%s: an answer to a client that left", m)
		}
		up.waitEnded(t, m)
	}
	run(0)
	early(0)
	time.Sleep(50 * time.Millisecond)
	before := runtime.NumGoroutine()
	const rounds = 20
	for i := 1; i <= rounds; i++ {
		run(i)
		early(i)
	}
	var cancelled int
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		cancelled = 0
		for _, r := range obs.Records() {
			if r.Status == 499 && r.Outcome == ledger.OutcomeCancelled {
				cancelled++
			}
		}
		if cancelled == 2*(rounds+1) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if cancelled != 2*(rounds+1) {
		t.Errorf("%d cancelled records, want %d: %+v", cancelled, 2*(rounds+1), obs.Records())
	}
	// Every abandoned stream's connection is closed; at most the one
	// idle connection of the good answers stays open.
	deadline = time.Now().Add(5 * time.Second)
	for up.opened.Load()-up.closed.Load() > 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if open := up.opened.Load() - up.closed.Load(); open > 1 {
		t.Errorf("%d upstream connections left open (opened %d)", open, up.opened.Load())
	}
	deadline = time.Now().Add(5 * time.Second)
	after := runtime.NumGoroutine()
	for after > before+3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		after = runtime.NumGoroutine()
	}
	if after > before+3 {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines %d -> %d after %d disconnects\n%s", before, after, rounds, buf[:runtime.Stack(buf, true)])
	}
	if s := g.backends["m"][0].State().Snapshot(time.Now()); s.RecentFails != 0 || s.InFlight != 0 {
		t.Errorf("client disconnects counted against the deployment: %+v", s)
	}
}

// restartable is a local server on a fixed port that can be restarted, as
// Ollama is by its service manager: every kept-alive connection dies.
type restartable struct {
	addr string
	h    http.Handler
	srv  *http.Server
	done chan struct{}
	keep bool
}

func (s *restartable) start(t *testing.T) {
	t.Helper()
	var l net.Listener
	var err error
	for i := 0; i < 100; i++ {
		if l, err = net.Listen("tcp", s.addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	s.srv = &http.Server{Handler: s.h}
	s.srv.SetKeepAlivesEnabled(s.keep)
	s.done = make(chan struct{})
	go func() { _ = s.srv.Serve(l); close(s.done) }()
}

func (s *restartable) stop() {
	_ = s.srv.Close()
	<-s.done
}

// Across 50 sequential requests, with the server restarted between
// requests (or answering with keep-alives off, as llama.cpp's server can),
// no request fails and every answer is its own.
func TestPlainUpstreamRestartsBetweenRequests(t *testing.T) {
	for _, keep := range []bool{true, false} {
		t.Run(fmt.Sprintf("keepalive=%v", keep), func(t *testing.T) {
			s := &restartable{addr: "127.0.0.1:0", keep: keep, h: plainHandler(func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
				answer(w, m, stream)
			})}
			s.start(t)
			defer func() { s.stop() }()
			g, obs := testGateway(t, "model_list:\n"+entry("m", "http://"+s.addr), nil)
			for i := 0; i < 50; i++ {
				m := fmt.Sprintf("r-%d", i)
				stream := i%3 == 1
				rec := post(g, alice, "/v1/chat/completions", markedBody("m", m, stream))
				checkOwn(t, rec.Code, rec.Body.String(), m, stream)
				if i%2 == 1 {
					s.stop()
					s.start(t)
				}
			}
			for _, a := range obs.Attempts() {
				if a.Err != "" {
					t.Errorf("failed attempt: %+v", a)
				}
			}
		})
	}
}

// Error answers (429, 500, 401, large and chunked ones) between good
// ones: each client gets its own status or its own answer, never what an
// earlier request left on the connection.
func TestPlainUpstreamErrorThenGood(t *testing.T) {
	up := newPlainUp(t, func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
		kind, _, _ := strings.Cut(m, ":")
		errBody := func(status int, extra string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"message":"%s %s","type":"server_error","param":null,"code":null}}`, m, extra)
		}
		switch kind {
		case "e429":
			w.Header().Set("Retry-After", "1")
			errBody(429, "")
		case "e500":
			errBody(500, "")
		case "e401":
			errBody(401, "")
		case "big":
			// Larger than the gateway reads of an error.
			errBody(500, strings.Repeat("x", 100<<10))
		case "slowbig":
			// More than the gateway reads of an error, the rest late:
			// the connection must not serve the next request, which
			// would read the rest as its answer.
			// The first part is exactly what the gateway reads, so
			// nothing is left buffered when it stops.
			pre := fmt.Sprintf(`{"error":{"message":"%s `, m)
			first := pre + strings.Repeat("x", (64<<10)-len(pre))
			rest := "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}" + `","type":"server_error"}}`
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", fmt.Sprint(len(first)+len(rest)))
			w.WriteHeader(500)
			fmt.Fprint(w, first)
			_ = http.NewResponseController(w).Flush()
			time.Sleep(50 * time.Millisecond)
			fmt.Fprint(w, rest)
		case "jsonstream":
			// A stream asked for and a JSON body given, trickling: the
			// gateway stops reading at once.
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(200)
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"%s`, m)
			_ = http.NewResponseController(w).Flush()
			time.Sleep(50 * time.Millisecond)
			fmt.Fprint(w, `"}}]}`)
		case "exact":
			// Exactly as long as the gateway reads of an error.
			pre := fmt.Sprintf(`{"error":{"message":"%s `, m)
			post := `","type":"server_error","param":null,"code":null}}`
			pad := (64 << 10) - len(pre) - len(post)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			fmt.Fprint(w, pre+strings.Repeat("y", pad)+post)
		case "chunked":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(503)
			fmt.Fprintf(w, `{"error":{"message":"%s`, m)
			_ = http.NewResponseController(w).Flush()
			fmt.Fprint(w, ` part two","type":"server_error"}}`)
		case "trailing":
			// An error answer with bytes after its declared length.
			// The stray answer would be the next request's if the
			// connection were kept; the server keeps it open, silent.
			b := fmt.Sprintf(`{"error":{"message":"%s","type":"server_error"}}`, m)
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(err)
			}
			defer c.Close()
			fmt.Fprintf(brw, "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
			fmt.Fprint(brw, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
			_ = brw.Flush()
			_, _ = io.Copy(io.Discard, c)
		default:
			answer(w, m, stream)
		}
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL, "max_retries: 0")+"router_settings:\n  cooldown_time: 0\n", nil)
	kinds := []struct {
		kind   string
		status int
	}{{"e429", 429}, {"e500", 500}, {"e401", 401}, {"big", 500}, {"exact", 500}, {"chunked", 503}, {"trailing", 500}, {"slowbig", 500}, {"jsonstream", 502}}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 80; i++ {
		stream := rng.Intn(2) == 0
		if rng.Intn(2) == 0 {
			k := kinds[rng.Intn(len(kinds))]
			m := fmt.Sprintf("%s:%d", k.kind, i)
			if k.kind == "jsonstream" {
				stream = true
			}
			rec := post(g, alice, "/v1/chat/completions", markedBody("m", m, stream))
			if k.kind == "jsonstream" {
				if rec.Code != 502 || !strings.Contains(rec.Body.String(), "does not stream") {
					t.Fatalf("%s: %d %.300s", m, rec.Code, rec.Body)
				}
				continue
			}
			if rec.Code != k.status || !strings.Contains(rec.Body.String(), m+" ") && !strings.Contains(rec.Body.String(), m+`"`) {
				t.Fatalf("%s: %d %.300s", m, rec.Code, rec.Body)
			}
			continue
		}
		m := fmt.Sprintf("good:%d", i)
		rec := post(g, alice, "/v1/chat/completions", markedBody("m", m, stream))
		checkOwn(t, rec.Code, rec.Body.String(), m, stream)
	}
	_ = obs
}

// Many concurrent streams, some abandoned by their clients at random:
// every completed one carries exactly its own content, every abandoned
// one a cancelled record, and the upstream sees each abandoned request end.
func TestPlainUpstreamConcurrentStreamsWithCancels(t *testing.T) {
	var up *plainUp
	up = newPlainUp(t, func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
		if !stream {
			answer(w, m, false)
			return
		}
		streamStart(w, m+"|a")
		if strings.HasPrefix(m, "gap") || strings.HasPrefix(m, "leave") {
			// A stall, or a stream its client will leave half way:
			// only the gateway's closing the request ends it.
			up.hold(r, m)
			return
		}
		for _, part := range []string{"|b"} {
			select {
			case <-r.Context().Done():
				up.ended <- m
				return
			case <-time.After(time.Duration(rand.Intn(4)) * time.Millisecond):
			}
			streamChunk(w, m+part, false)
		}
		streamChunk(w, "", true)
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL, "stream_timeout: 0.1")+"router_settings:\n  cooldown_time: 0\n", nil)
	srv := serveGateway(t, g)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	defer client.CloseIdleConnections()

	const workers, each = 16, 12
	var wg sync.WaitGroup
	var completed, left, gaps atomic.Int64
	errs := make(chan string, workers*each)
	for wkr := 0; wkr < workers; wkr++ {
		wg.Add(1)
		go func(wkr int) {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(wkr)))
			for i := 0; i < each; i++ {
				m := fmt.Sprintf("w%d-%d", wkr, i)
				stream := rng.Intn(4) != 0
				leave := stream && rng.Intn(3) == 0
				gap := stream && !leave && rng.Intn(5) == 0
				if gap {
					m = "gap" + m
				}
				if leave {
					m = "leave" + m
				}
				ctx, cancel := context.WithCancel(context.Background())
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions", strings.NewReader(markedBody("m", m, stream)))
				resp, err := client.Do(req)
				if err != nil {
					cancel()
					errs <- m + ": " + err.Error()
					continue
				}
				if leave {
					line, _ := bufio.NewReader(resp.Body).ReadString('\n')
					cancel()
					resp.Body.Close()
					if !strings.Contains(line, m+"|a") {
						errs <- m + ": first line not its own: " + line
					}
					left.Add(1)
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				cancel()
				body := string(b)
				if err != nil || resp.StatusCode != 200 {
					errs <- fmt.Sprintf("%s: %d %v %s", m, resp.StatusCode, err, body)
					continue
				}
				if gap {
					if !strings.Contains(body, m+"|a") || !strings.Contains(body, "paused longer than 100ms") || strings.Contains(body, "[DONE]") || strings.Count(body, "|") != 1 {
						errs <- m + ": stalled stream: " + body
					}
					gaps.Add(1)
					continue
				}
				if stream {
					if !strings.Contains(body, m+"|a") || !strings.Contains(body, m+"|b") || !strings.Contains(body, "[DONE]") || strings.Count(body, "|") != 2 {
						errs <- m + ": not its own stream: " + body
						continue
					}
				} else if !strings.Contains(body, fmt.Sprintf("%q", m)) || strings.Count(body, `"w`) != 1 {
					errs <- m + ": not its own answer: " + body
					continue
				}
				completed.Add(1)
			}
		}(wkr)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	total := int(completed.Load() + left.Load() + gaps.Load())
	deadline := time.Now().Add(5 * time.Second)
	for len(obs.Records()) < total && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	ok, cancelled, timedOut := 0, 0, 0
	for _, r := range obs.Records() {
		switch {
		case r.Status == 504 && r.Outcome == ledger.OutcomeError:
			timedOut++
		case r.Status == 200 && r.Outcome == ledger.OutcomeOK:
			ok++
		case r.Status == 499 && r.Outcome == ledger.OutcomeCancelled:
			cancelled++
		default:
			t.Errorf("record %+v", r)
		}
	}
	if ok != int(completed.Load()) || cancelled != int(left.Load()) || timedOut != int(gaps.Load()) {
		t.Errorf("records: %d ok, %d cancelled, %d timed out; clients: %d completed, %d left, %d stalled", ok, cancelled, timedOut, completed.Load(), left.Load(), gaps.Load())
	}
	if gaps.Load() == 0 || left.Load() == 0 {
		t.Errorf("the run stalled %d and abandoned %d streams; it should do both", gaps.Load(), left.Load())
	}
	// The upstream saw every stalled and abandoned request end.
	deadline = time.Now().Add(5 * time.Second)
	for len(up.ended) < int(gaps.Load()+left.Load()) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(up.ended); n != int(gaps.Load()+left.Load()) {
		t.Errorf("the upstream saw %d held requests end, want %d", n, gaps.Load()+left.Load())
	}
}

// A server that sends the stream's end marker and then keeps the answer
// open (a close-delimited body, or a server slow to end it): the client
// has its whole answer, so stream_timeout firing afterwards must not
// append an error, record a 504, or count against the deployment. (Not
// the plain transport's doing: net/http's Transport behaved the same.)
func TestPlainUpstreamHoldsAfterDone(t *testing.T) {
	var up *plainUp
	up = newPlainUp(t, func(w http.ResponseWriter, r *http.Request, m string, stream bool) {
		answer(w, m, stream)
		if stream && strings.HasPrefix(m, "hold") {
			up.hold(r, m)
		}
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL, "stream_timeout: 0.15"), nil)
	rec := post(g, alice, "/v1/chat/completions", markedBody("m", "hold-1", true))
	checkOwn(t, rec.Code, rec.Body.String(), "hold-1", true)
	if strings.Contains(rec.Body.String(), "paused") {
		t.Errorf("an error after the end marker: %s", rec.Body)
	}
	up.waitEnded(t, "hold-1")
	if r := nthRecord(t, obs, 1); r.Status != 200 || r.Outcome != ledger.OutcomeOK || r.OutputTokens != 2 {
		t.Errorf("record: status %d outcome %q output %d", r.Status, r.Outcome, r.OutputTokens)
	}
	if s := g.backends["m"][0].State().Snapshot(time.Now()); s.RecentFails != 0 {
		t.Errorf("a complete stream counted against the deployment: %+v", s)
	}
	rec = post(g, alice, "/v1/chat/completions", markedBody("m", "next", false))
	checkOwn(t, rec.Code, rec.Body.String(), "next", false)

	// The same with only the attempt's timeout to end the wait.
	gt, obst := testGateway(t, "model_list:\n"+entry("m", up.srv.URL, "timeout: 0.2"), nil)
	rec = post(gt, alice, "/v1/chat/completions", markedBody("m", "hold-2", true))
	checkOwn(t, rec.Code, rec.Body.String(), "hold-2", true)
	if strings.Contains(rec.Body.String(), "timeout") {
		t.Errorf("an error after the end marker: %s", rec.Body)
	}
	up.waitEnded(t, "hold-2")
	if r := nthRecord(t, obst, 1); r.Status != 200 || r.Outcome != ledger.OutcomeOK {
		t.Errorf("record under timeout: status %d outcome %q", r.Status, r.Outcome)
	}
}
