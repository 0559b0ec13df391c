package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testwait"
)

// scriptedServer accepts connections on 127.0.0.1 and hands each to
// serve with its number (from 1).
func scriptedServer(t *testing.T, serve func(n int, c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				serve(n, c)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// Bytes a server sent past the end of an answer (a body longer than its
// Content-Length, a body after a 204 or a HEAD's answer) sit in the
// connection's buffer where no peek sees them: the next request on that
// connection would read them as its answer.
func TestPlainHostileBytesPastTheAnswerAreNotTheNextAnswer(t *testing.T) {
	url := scriptedServer(t, func(n int, c net.Conn) {
		serveRequests(c, func(i int, _ *http.Request) bool {
			if n == 1 && i == 0 {
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"+
					"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nstale!")
				return true
			}
			_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfresh")
			return true
		})
	})
	tr := testPlainTransport(t)
	resp, err := post(t, context.Background(), tr, url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "ok" {
		t.Fatalf("first answer %q", got)
	}
	time.Sleep(20 * time.Millisecond)
	resp, err = post(t, context.Background(), tr, url, "{}")
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, resp); got != "fresh" {
		t.Fatalf("second request read %q, want its own answer", got)
	}
}

// failingBody gives some bytes, then fails: an upload that broke off.
type failingBody struct{ n int }

var errUploadBroke = errors.New("upload broke off")

func (b *failingBody) Read(p []byte) (int, error) {
	if b.n <= 0 {
		return 0, errUploadBroke
	}
	n := min(len(p), b.n)
	for i := range p[:n] {
		p[i] = 'x'
	}
	b.n -= n
	return n, nil
}

func roundTrippers(t *testing.T) map[string]http.RoundTripper {
	nt := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute, DialContext: (&net.Dialer{}).DialContext}
	t.Cleanup(nt.CloseIdleConnections)
	return map[string]http.RoundTripper{"net/http": nt, "plain": testPlainTransport(t)}
}

// A request body that fails half way must fail the request at once: the
// server still waits for the rest of the body and will not answer.
func TestPlainHostileRequestBodyErrorEndsTheRequest(t *testing.T) {
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
	})
	for name, rt := range roundTrippers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL, io.NopCloser(&failingBody{n: 10}))
			req.ContentLength = 100
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatal("an answer to a request whose body failed")
			}
			if d := time.Since(start); d > time.Second {
				t.Fatalf("took %v (%v): the failed body waited for the context", d, err)
			}
			// net/http hands back the body's error itself; Request.Write
			// wraps it in a type of its own, which only shows its text.
			if !strings.Contains(err.Error(), errUploadBroke.Error()) {
				t.Fatalf("error %v, want the body's", err)
			}
		})
	}
}

// A server that refuses a large request at once (an early 401 or 413)
// and neither reads the rest of the body nor closes: its answer must come
// back, not wait behind a write that cannot finish.
func TestPlainHostileEarlyAnswerToALargeBody(t *testing.T) {
	url := scriptedServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 413 Request Entity Too Large\r\nContent-Length: 0\r\n\r\n")
		time.Sleep(5 * time.Second) // neither reads nor closes
	})
	for name, rt := range roundTrippers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			body := strings.Repeat("x", 64<<20)
			start := time.Now()
			resp, err := post(t, ctx, rt, url, body)
			if err != nil {
				t.Fatalf("after %v: %v", time.Since(start), err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || time.Since(start) > time.Second {
				t.Fatalf("status %d after %v", resp.StatusCode, time.Since(start))
			}
		})
	}
}

// A body read after Close, or after a read failed, must not look like a
// body that ended well: a stream cut off half way is not a whole one.
func TestPlainHostileReadAfterCloseOrErrorIsNoEOF(t *testing.T) {
	url := scriptedServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
		time.Sleep(50 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0) // a reset half way
	})
	for name, rt := range roundTrippers(t) {
		t.Run(name, func(t *testing.T) {
			resp, err := post(t, context.Background(), rt, url, "{}")
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 100)
			_, err = io.ReadFull(resp.Body, buf)
			if err == nil {
				t.Fatal("a whole body from a server that sent part of one")
			}
			if _, err := resp.Body.Read(buf); err == io.EOF {
				t.Fatal("read after a failed read: io.EOF")
			}
			resp.Body.Close()
			if _, err := resp.Body.Read(buf); err == io.EOF {
				t.Fatal("read after Close: io.EOF")
			}
		})
	}
}

// A cancel half way through the body ends the read with the context's
// error, as net/http's does: the gateway tells a client that went away
// from an upstream that timed out by it.
func TestPlainHostileCancelMidBodyIsTheContextsError(t *testing.T) {
	url := scriptedServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
		time.Sleep(3 * time.Second)
	})
	for name, rt := range roundTrippers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			resp, err := post(t, ctx, rt, url, "{}")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			_, err = io.ReadAll(resp.Body)
			if time.Since(start) > time.Second {
				t.Fatalf("cancel took %v", time.Since(start))
			}
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("error %v (class %s), want context.Canceled", err, ErrorClass(ctx, err))
			}
		})
	}
}

// Headers without end (a server gone wrong, or endless 103s) must not
// grow without bound: net/http stops at MaxResponseHeaderBytes (10 MB).
func TestPlainHostileEndlessHeaders(t *testing.T) {
	url := scriptedServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n")
		line := "X-Junk: " + strings.Repeat("y", 4000) + "\r\n"
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if _, err := io.WriteString(c, line); err != nil {
				return
			}
		}
	})
	for name, rt := range roundTrippers(t) {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			start := time.Now()
			resp, err := post(t, ctx, rt, url, "{}")
			if err == nil {
				resp.Body.Close()
				t.Fatal("an answer with endless headers")
			}
			if errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
				t.Fatalf("after %v: %v: the headers were read until the context ended", time.Since(start), err)
			}
		})
	}
}

// A request whose context ended before it was sent never reaches the
// server (net/http checks first): a local server would run the whole
// generation for nobody.
func TestPlainHostileEndedContextSendsNothing(t *testing.T) {
	var requests atomic.Int64
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
	})
	tr := testPlainTransport(t)
	for range 200 {
		// A kept connection is there, so no dial stops the request.
		resp, err := post(t, context.Background(), tr, s.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if resp, err := post(t, ctx, tr, s.URL, "{}"); err == nil {
			resp.Body.Close()
			t.Fatal("an answer to a cancelled request")
		} else if !errors.Is(err, context.Canceled) {
			t.Fatalf("error %v, want context.Canceled", err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	if n := requests.Load(); n != 200 {
		t.Fatalf("the server ran %d requests, want 200: cancelled ones went out", n)
	}
}

// Close from another goroutine while Read waits, and a cancel racing the
// body's end: no race, no hang, and no connection reused half read.
func TestPlainHostileCloseAndCancelRaceTheRead(t *testing.T) {
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		f := w.(http.Flusher)
		for i := range 20 {
			fmt.Fprintf(w, "data: %d\n\n", i)
			f.Flush()
		}
	})
	tr := testPlainTransport(t)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			resp, err := post(t, ctx, tr, s.URL, "{}")
			if err != nil {
				return
			}
			switch i % 3 {
			case 0:
				go resp.Body.Close()
			case 1:
				go cancel()
			}
			b, err := io.ReadAll(resp.Body)
			if err == nil && !strings.HasSuffix(string(b), "data: 19\n\n") {
				t.Errorf("a whole body that is not: %q", b)
			}
			resp.Body.Close()
		}()
	}
	wg.Wait()
	// Every kept connection is whole: a plain request reads its own answer.
	for range 10 {
		resp, err := post(t, context.Background(), tr, s.URL, "{}")
		if err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, resp); !strings.HasPrefix(got, "data: 0\n\n") || !strings.HasSuffix(got, "data: 19\n\n") {
			t.Fatalf("answer %q", got)
		}
	}
}

// Servers of the old school: HTTP/1.0 answers, bodies that end with the
// connection, keep-alive that ends after a few requests without a word,
// chunked bodies with trailers, a 204 and a HEAD.
func TestPlainHostileOldSchoolServers(t *testing.T) {
	url := scriptedServer(t, func(n int, c net.Conn) {
		serveRequests(c, func(i int, req *http.Request) bool {
			switch req.URL.Path {
			case "/10":
				_, _ = io.WriteString(c, "HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nok10")
			case "/eof":
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\n\r\nuntil-close")
				return false
			case "/three":
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nthree")
				if i == 2 {
					return false
				}
			case "/chunked":
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Done\r\n\r\n3\r\nabc\r\n0\r\nX-Done: yes\r\n\r\n")
			case "/204":
				_, _ = io.WriteString(c, "HTTP/1.1 204 No Content\r\n\r\n")
			case "/head":
				_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n")
			}
			return true
		})
	})
	tr := testPlainTransport(t)
	for i := range 60 {
		for _, tc := range []struct{ path, want string }{{"/10", "ok10"}, {"/eof", "until-close"}, {"/three", "three"}, {"/chunked", "abc"}, {"/204", ""}, {"/head", ""}} {
			method := http.MethodPost
			if tc.path == "/head" {
				method = http.MethodHead
			}
			req, _ := http.NewRequest(method, url+tc.path, strings.NewReader("{}"))
			if method == http.MethodHead {
				req.Body, req.ContentLength = nil, 0
			}
			resp, err := tr.RoundTrip(req)
			if err != nil {
				t.Fatalf("%d %s: %v", i, tc.path, err)
			}
			if got := readAll(t, resp); got != tc.want {
				t.Fatalf("%d %s: %q", i, tc.path, got)
			}
			if tc.path == "/chunked" && resp.Trailer.Get("X-Done") != "yes" {
				t.Fatalf("trailer %v", resp.Trailer)
			}
		}
	}
}

// After failures of every kind and CloseIdleConnections, no connection
// and no goroutine of the transport is left.
func TestPlainHostileNothingLeaks(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc")
	}
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	s := newPlainServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		switch r.URL.Path {
		case "/slow":
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		case "/reset":
			c, _, _ := w.(http.Hijacker).Hijack()
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
			return
		}
		_, _ = io.WriteString(w, "body")
	})
	refused := scriptedServer(t, func(int, net.Conn) {})
	tr := testPlainTransport(t)
	runtime.GC()
	fd0, g0 := fds(), runtime.NumGoroutine()
	for range 50 {
		if resp, err := post(t, context.Background(), tr, s.URL+"/ok", "{}"); err == nil {
			readAll(t, resp)
		}
		if resp, err := post(t, context.Background(), tr, s.URL+"/ok", "{}"); err == nil {
			resp.Body.Close() // unread
		}
		_, _ = post(t, context.Background(), tr, s.URL+"/reset", "{}")
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if resp, err := post(t, ctx, tr, s.URL+"/slow", "{}"); err == nil {
			_, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		cancel()
		_, _ = post(t, context.Background(), tr, refused, "{}")
	}
	tr.CloseIdleConnections()
	testwait.Until(func() bool { return fds() <= fd0 && runtime.NumGoroutine()-g0 <= 2 })
	if d := fds() - fd0; d > 0 {
		t.Errorf("%d descriptors more than before", d)
	}
	if d := runtime.NumGoroutine() - g0; d > 2 {
		t.Errorf("%d goroutines more than before", d)
	}
}

// A response whose context ended and whose body nobody closes holds no
// connection: net/http's Transport closes it when the context ends.
func TestPlainHostileCancelFreesAnUnclosedBody(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("no /proc")
	}
	fds := func() int { e, _ := os.ReadDir("/proc/self/fd"); return len(e) }
	url := scriptedServer(t, func(n int, c net.Conn) {
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\npartial")
		_, _ = br.ReadByte() // until the client goes
	})
	tr := testPlainTransport(t)
	fd0 := fds()
	for range 20 {
		ctx, cancel := context.WithCancel(context.Background())
		if _, err := post(t, ctx, tr, url, "{}"); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	testwait.Until(func() bool { return fds() <= fd0 })
	if d := fds() - fd0; d > 0 {
		t.Errorf("%d descriptors more than before", d)
	}
}

// A request without a body needs no GetBody to go again: net/http sends
// it again when a kept connection fails before it went out whole.
func TestPlainHostileBodilessRequestIsRetried(t *testing.T) {
	d := &pipeDialer{serve: func(n int64, c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		_, _ = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}}
	tr := d.transport()
	for i := range 2 {
		req, _ := http.NewRequest(http.MethodGet, "http://upstream.test/v1/models", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got := readAll(t, resp); got != "ok" {
			t.Fatalf("request %d: %q", i, got)
		}
	}
}
