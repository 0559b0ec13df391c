package upstream

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/modellist"
)

// plainServer is an HTTP/1.1 test upstream that counts the connections
// it accepted.
type plainServer struct {
	*httptest.Server
	conns atomic.Int64
}

func newPlainServer(t *testing.T, h http.HandlerFunc) *plainServer {
	t.Helper()
	s := &plainServer{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func testPlainTransport(t *testing.T) *plainTransport {
	t.Helper()
	if !plainHTTP {
		t.Skip("no plain transport on this platform")
	}
	tr := newPlainTransport(&http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute, DialContext: (&net.Dialer{}).DialContext})
	t.Cleanup(tr.CloseIdleConnections)
	return tr
}

func post(t *testing.T, ctx context.Context, rt http.RoundTripper, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return rt.RoundTrip(req)
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return string(b)
}

func echoHandler(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"method":%q,"len":%d,"ct":%q}`, r.Method, len(b), r.Header.Get("Content-Type"))
}

func TestPlainTransportKeepsOneConnectionAlive(t *testing.T) {
	s := newPlainServer(t, echoHandler)
	tr := testPlainTransport(t)
	for i := range 20 {
		resp, err := post(t, context.Background(), tr, s.URL+"/v1/chat/completions", `{"n":`+fmt.Sprint(i)+`}`)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := readAll(t, resp), fmt.Sprintf(`{"method":"POST","len":%d,"ct":"application/json"}`, len(`{"n":`+fmt.Sprint(i)+`}`)); got != want {
			t.Fatalf("answer %d: %s, want %s", i, got, want)
		}
	}
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("20 requests one after another opened %d connections, want 1", n)
	}
}

func TestPlainTransportBodyClosedEarlyDropsTheConnection(t *testing.T) {
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write(bytes.Repeat([]byte("x"), 64<<10))
	})
	tr := testPlainTransport(t)
	resp, err := post(t, context.Background(), tr, s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 10)
	if _, err := io.ReadFull(resp.Body, buf); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The unread rest would be read as the next answer's head on a
	// connection kept: it must not be kept.
	resp, err = post(t, context.Background(), tr, s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); len(got) != 64<<10 {
		t.Fatalf("second answer: %d bytes, want %d", len(got), 64<<10)
	}
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (the first closed with its unread body)", n)
	}
	// Read after close ends at once, and a second Close is harmless.
	if n, err := resp.Body.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("read after the end: %d, %v", n, err)
	}
	resp.Body.Close()
}

func TestPlainTransportServerClosedIdleConnectionIsNotUsed(t *testing.T) {
	s := newPlainServer(t, echoHandler)
	tr := testPlainTransport(t)
	for i := range 3 {
		resp, err := post(t, context.Background(), tr, s.URL, "{}")
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		readAll(t, resp)
		// The server drops every kept-alive connection while it waits.
		s.CloseClientConnections()
		time.Sleep(20 * time.Millisecond)
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3", n)
	}
}

func TestPlainTransportConnectionCloseIsHonoured(t *testing.T) {
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		echoHandler(w, r)
	})
	tr := testPlainTransport(t)
	for range 3 {
		resp, err := post(t, context.Background(), tr, s.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if n := s.conns.Load(); n != 3 {
		t.Fatalf("%d connections, want 3 (each answer said Connection: close)", n)
	}
	if n := len(tr.idle[strings.TrimPrefix(s.URL, "http://")]); n != 0 {
		t.Fatalf("%d idle connections kept, want 0", n)
	}
}

func TestPlainTransportCancelAndDeadline(t *testing.T) {
	release := make(chan struct{})
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/midstream" {
			_, _ = w.Write([]byte("data: 1\n\n"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	tr := testPlainTransport(t)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := post(t, ctx, tr, s.URL+"/head", "{}")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting for a head past the deadline: %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("the deadline took %s to end the wait", d)
	}

	ctx, cancel = context.WithCancel(context.Background())
	resp, err := post(t, ctx, tr, s.URL+"/midstream", "{}")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || line != "data: 1\n" {
		t.Fatalf("first event: %q, %v", line, err)
	}
	go func() { time.Sleep(50 * time.Millisecond); cancel() }()
	if _, err := io.ReadAll(br); err == nil {
		t.Fatal("a cancelled stream read to a clean end")
	}
	resp.Body.Close()
	if n := len(tr.idle[strings.TrimPrefix(s.URL, "http://")]); n != 0 {
		t.Fatalf("%d idle connections kept after a cancel, want 0", n)
	}
}

func TestPlainTransportStreamsChunksAsTheyCome(t *testing.T) {
	next := make(chan struct{})
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 3 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			if i < 2 {
				<-next
			}
		}
	})
	tr := testPlainTransport(t)
	resp, err := post(t, context.Background(), tr, s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != -1 || len(resp.TransferEncoding) == 0 {
		t.Fatalf("a stream: content length %d, transfer encoding %v", resp.ContentLength, resp.TransferEncoding)
	}
	br := bufio.NewReader(resp.Body)
	for i := range 3 {
		// Each event arrives before the server writes the next.
		line, err := br.ReadString('\n')
		if err != nil || line != fmt.Sprintf("data: %d\n", i) {
			t.Fatalf("event %d: %q, %v", i, line, err)
		}
		_, _ = br.ReadString('\n')
		if i < 2 {
			next <- struct{}{}
		}
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the last event: %q, %v", rest, err)
	}
	resp.Body.Close()
	resp, err = post(t, context.Background(), tr, s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	go func() { next <- struct{}{}; next <- struct{}{} }()
	readAll(t, resp)
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1 (a stream read to its end leaves its connection)", n)
	}
}

func TestPlainTransportLargeBodiesBothWays(t *testing.T) {
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(bytes.ToUpper(b))
	})
	tr := testPlainTransport(t)
	body := strings.Repeat("abcdefgh", 1<<17) // 1 MiB
	resp, err := post(t, context.Background(), tr, s.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != strings.ToUpper(body) {
		t.Fatalf("answer of %d bytes, want the %d bytes sent, upper-cased", len(got), len(body))
	}
}

func TestPlainTransportSkipsInterimAnswers(t *testing.T) {
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</style.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Del("Link")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte("made"))
	})
	tr := testPlainTransport(t)
	resp, err := post(t, context.Background(), tr, s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusCreated || readAll(t, resp) != "made" {
		t.Fatalf("status %d, want 201 after the 103", resp.StatusCode)
	}
}

func TestPlainTransportLeavesTLSToNext(t *testing.T) {
	s := httptest.NewTLSServer(http.HandlerFunc(echoHandler))
	defer s.Close()
	next := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}}
	defer next.CloseIdleConnections()
	tr := newPlainTransport(next)
	resp, err := post(t, context.Background(), tr, s.URL, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if resp.TLS == nil || !strings.Contains(readAll(t, resp), `"POST"`) {
		t.Fatal("an https request did not go through next")
	}
}

// pipeDialer hands out in-memory connections to a scripted server.
type pipeDialer struct {
	dials atomic.Int64
	serve func(n int64, c net.Conn)
}

func (d *pipeDialer) dial(context.Context, string, string) (net.Conn, error) {
	n := d.dials.Add(1)
	client, server := net.Pipe()
	go d.serve(n, server)
	return client, nil
}

// transport is a plain transport whose connections d hands out.
func (d *pipeDialer) transport() *plainTransport {
	return &plainTransport{dial: d.dial, next: http.DefaultTransport, maxIdle: 2, idleTimeout: time.Minute, now: time.Now, idle: map[string][]*plainConn{}}
}

// serveRequests reads the requests on c one after another, each body read
// through, and gives each to answer with its index on the connection,
// until the client goes or answer returns false.
func serveRequests(c net.Conn, answer func(i int, req *http.Request) bool) {
	br := bufio.NewReader(c)
	for i := 0; ; i++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		if !answer(i, req) {
			return
		}
	}
}

func TestPlainTransportRetriesOnceWhenTheWriteFailsOnAKeptConnection(t *testing.T) {
	if !plainHTTP {
		t.Skip("no plain transport on this platform")
	}
	var requests atomic.Int64
	d := &pipeDialer{serve: func(n int64, c net.Conn) {
		defer c.Close()
		// Each connection is dropped right after its first answer; a pipe
		// shows nothing to a peek, so the next request finds out by
		// writing.
		serveRequests(c, func(int, *http.Request) bool {
			requests.Add(1)
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return false
		})
	}}
	tr := d.transport()
	for i := range 2 {
		resp, err := post(t, context.Background(), tr, "http://upstream.test/v1", `{"i":1}`)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
	}
	if n := d.dials.Load(); n != 2 {
		t.Fatalf("%d dials, want 2 (the retry's)", n)
	}
	if n := requests.Load(); n != 2 {
		t.Fatalf("the server ran %d requests, want 2 (none twice)", n)
	}
}

func TestPlainTransportDoesNotRetryAWrittenRequest(t *testing.T) {
	if !plainHTTP {
		t.Skip("no plain transport on this platform")
	}
	var requests atomic.Int64
	d := &pipeDialer{serve: func(n int64, c net.Conn) {
		defer c.Close()
		serveRequests(c, func(int, *http.Request) bool {
			if requests.Add(1) == 2 {
				return false // ran it, then went away without an answer
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			return true
		})
	}}
	tr := d.transport()
	resp, err := post(t, context.Background(), tr, "http://upstream.test/v1", "{}")
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if _, err := post(t, context.Background(), tr, "http://upstream.test/v1", "{}"); err == nil {
		t.Fatal("an answer from a server that sent none")
	}
	if n := requests.Load(); n != 2 {
		t.Fatalf("the server ran %d requests, want 2: a request the server may have run is not sent again", n)
	}
}

func TestPlainTransportPrunesIdleConnections(t *testing.T) {
	s := newPlainServer(t, echoHandler)
	tr := testPlainTransport(t)
	tr.idleTimeout = 50 * time.Millisecond
	var wg sync.WaitGroup
	var resps [3]*http.Response
	for i := range resps {
		r, err := post(t, context.Background(), tr, s.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		resps[i] = r
	}
	for _, r := range resps {
		wg.Add(1)
		go func() { defer wg.Done(); readAll(t, r) }()
	}
	wg.Wait()
	addr := strings.TrimPrefix(s.URL, "http://")
	tr.mu.Lock()
	kept := len(tr.idle[addr])
	tr.mu.Unlock()
	if kept != 3 {
		t.Fatalf("%d connections kept, want 3", kept)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		tr.mu.Lock()
		kept, pruning := len(tr.idle[addr]), tr.pruning
		tr.mu.Unlock()
		if kept == 0 && !pruning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connections still kept past the idle timeout", kept)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestPlainTransportConcurrentRequests(t *testing.T) {
	s := newPlainServer(t, echoHandler)
	tr := testPlainTransport(t)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				body := fmt.Sprintf(`{"w":%d,"i":%d}`, w, i)
				resp, err := post(t, context.Background(), tr, s.URL, body)
				if err != nil {
					errs <- err
					return
				}
				got := readAll(t, resp)
				if want := fmt.Sprintf(`"len":%d`, len(body)); !strings.Contains(got, want) {
					errs <- fmt.Errorf("answer %q lacks %s", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Eight workers never need more than eight connections, and at most
	// maxIdle (4) wait between requests.
	if n := s.conns.Load(); n > 8+4 {
		t.Fatalf("%d connections for 8 workers", n)
	}
}

func TestClientSetUsesThePlainTransportOnlyWhereItCan(t *testing.T) {
	t.Setenv("HTTP_PROXY", "")
	t.Setenv("NO_PROXY", "")
	set := NewClientSet()
	for _, tc := range []struct {
		base  string
		plain bool
	}{
		{"http://127.0.0.1:11434/v1", plainHTTP},
		{"https://api.openai.com/v1", false},
	} {
		c := set.ForDeployment(&modellist.Deployment{Kind: modellist.KindOpenAI, APIBase: tc.base})
		_, plain := c.Transport.(*plainTransport)
		if plain != tc.plain {
			t.Errorf("%s: plain transport %v, want %v", tc.base, plain, tc.plain)
		}
	}
}

func TestPlainAddr(t *testing.T) {
	for _, tc := range []struct {
		url, addr string
		ok        bool
	}{
		{"http://127.0.0.1:11434/v1/chat/completions", "127.0.0.1:11434", true},
		{"http://localhost/v1", "localhost:80", true},
		{"http://[::1]:8000/v1", "[::1]:8000", true},
		{"http://[::1]/v1", "[::1]:80", true},
		{"http://exämple.test:8000/v1", "", false}, // net/http converts it to ASCII first
		{"https://api.openai.com/v1", "", false},
		{"http:///v1", "", false},
	} {
		u, err := url.Parse(tc.url)
		if err != nil {
			t.Fatal(err)
		}
		ok := plainURL(u)
		addr := ""
		if ok {
			addr = dialAddr(u)
		}
		if addr != tc.addr || ok != tc.ok {
			t.Errorf("%s: %q, %v; want %q, %v", tc.url, addr, ok, tc.addr, tc.ok)
		}
	}
}
