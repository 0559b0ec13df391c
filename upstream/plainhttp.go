package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// plainTransport carries requests to a plain-HTTP/1.1 upstream (a local
// inference server: no TLS, no proxy) on the caller's goroutine: it writes
// the request and reads the answer's head itself, on a kept-alive
// connection. net/http's Transport instead hands every request to a writer
// goroutine and every answer over from a reader goroutine, two goroutine
// switches and a dozen allocations a request that the gateway's hot path
// measurably pays for (BENCHMARKS.md, "one goroutine per upstream call").
// The wire format is net/http's own (Request.Write, ReadResponse); what
// this transport leaves out (TLS, HTTP/2, proxies, upgrades, Expect) goes
// to next.
type plainTransport struct {
	dial        func(ctx context.Context, network, addr string) (net.Conn, error)
	next        http.RoundTripper
	maxIdle     int           // idle connections kept per host
	idleTimeout time.Duration // an idle connection older than this is closed
	now         func() time.Time
	maxHeader   int64 // bytes an answer's head may take; 0 is net/http's default

	mu      sync.Mutex
	idle    map[string][]*plainConn // by the URL's host, the most recently used last
	pruning bool                    // a prune is scheduled
}

func newPlainTransport(next *http.Transport) *plainTransport {
	return &plainTransport{
		dial:        next.DialContext,
		next:        next,
		maxIdle:     next.MaxIdleConnsPerHost,
		idleTimeout: next.IdleConnTimeout,
		now:         time.Now,
		maxHeader:   next.MaxResponseHeaderBytes,
		idle:        make(map[string][]*plainConn),
	}
}

// plainConn is one kept-alive connection and its buffers, which read
// and write through it.
type plainConn struct {
	c         net.Conn
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
	// readLimit bounds what an answer's head may take, as net/http's
	// MaxResponseHeaderBytes does: a server sending headers (or 1xx
	// answers) without end must not grow them without bound.
	readLimit int64
	// writeFailed says a write to the connection failed, which tells a
	// server that stopped taking the request from a request body that
	// failed to read.
	writeFailed bool
}

func (pc *plainConn) Read(p []byte) (int, error) {
	if pc.readLimit <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(p)) > pc.readLimit {
		p = p[:pc.readLimit]
	}
	n, err := pc.c.Read(p)
	pc.readLimit -= int64(n)
	return n, err
}

func (pc *plainConn) Write(p []byte) (int, error) {
	n, err := pc.c.Write(p)
	if err != nil {
		pc.writeFailed = true
	}
	return n, err
}

var errHeadTooLarge = errors.New("upstream's answer headers too large")

// plainMaxBody is the largest request body the plain transport sends.
// It writes the whole request before it reads, so a server that answers
// early (a 401, a 413) without reading the rest of the body or closing
// would leave it stuck in a write the socket buffers cannot take; bodies
// that surely fit in them, and those alone, may go this way. For larger
// ones net/http's goroutines cost little next to the copying.
const plainMaxBody = 64 << 10

// RoundTrip implements http.RoundTripper.
func (t *plainTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !plainURL(req.URL) || req.Header.Get("Upgrade") != "" || req.Header.Get("Expect") != "" || !smallBody(req) {
		return t.next.RoundTrip(req)
	}
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		// On a kept connection the request would go out before the
		// context's AfterFunc stops it, and a local server would run it
		// for nobody.
		closeBody(req)
		return nil, err
	}
	// Connections are kept under the URL's host as written: no address
	// is formed per request, only when one is dialled.
	host := req.URL.Host
	pc, reused, err := t.get(ctx, req.URL)
	if err != nil {
		closeBody(req)
		return nil, err
	}
	resp, written, err := t.exchange(ctx, req, pc, host)
	bodiless := req.Body == nil || req.Body == http.NoBody
	if err != nil && reused && !written && (req.GetBody != nil || bodiless) && ctx.Err() == nil {
		// The server closed a kept-alive connection just as the request
		// went out on it, and the request never reached it whole: no
		// handler of the server can have run it, so it goes again, once,
		// on a connection of its own. A request without a body needs no
		// GetBody for that.
		r2 := *req
		if !bodiless {
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			r2.Body = body
		}
		if pc, err = t.dialConn(ctx, req.URL); err != nil {
			closeBody(&r2)
			return nil, err
		}
		resp, _, err = t.exchange(ctx, &r2, pc, host)
	}
	return resp, err
}

// plainURL says this transport carries u: plain HTTP to a host named in
// ASCII. Another scheme, or a name net/http would convert to ASCII first
// (IDNA), is left to next.
func plainURL(u *url.URL) bool {
	if u.Scheme != "http" || u.Hostname() == "" {
		return false
	}
	for i := 0; i < len(u.Host); i++ {
		if u.Host[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// dialAddr is the host:port to dial for u, as net/http's Transport forms
// it: an IPv6 literal keeps one pair of brackets, and port 80 stands in
// when none is given.
func dialAddr(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = "80"
	}
	return net.JoinHostPort(u.Hostname(), port)
}

// smallBody says req's body is known to fit in plainMaxBody.
func smallBody(req *http.Request) bool {
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	// A body of length 0 that is not NoBody is one of unknown length.
	return req.ContentLength > 0 && req.ContentLength <= plainMaxBody
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// exchange writes req on pc and reads the answer's head; written says the
// whole request was sent, or that it must not be sent again. The caller
// reads the body, and pc goes back to the idle list once that is read to
// its end.
func (t *plainTransport) exchange(ctx context.Context, req *http.Request, pc *plainConn, host string) (*http.Response, bool, error) {
	// The context's end closes the connection, which ends its reads and
	// writes at once and frees it even when the caller never closes the
	// body, as net/http's Transport does; the errors read as the
	// context's.
	stop := context.AfterFunc(ctx, func() { _ = pc.c.Close() })
	werr := req.Write(pc.bw)
	if werr == nil {
		werr = pc.bw.Flush()
	}
	if werr != nil && !pc.writeFailed {
		// The request's own body failed (an upload that broke off): the
		// server waits for the rest of it and will not answer, and the
		// request is not sent again, as net/http does not either.
		stop()
		_ = pc.c.Close()
		if cerr := ctx.Err(); cerr != nil {
			werr = cerr
		}
		return nil, true, werr
	}
	// A server that answers before it has read the whole body (an early
	// 413) may close the connection under the write: its answer, if it
	// sent one, is still worth reading.
	pc.readLimit = t.maxHeaderBytes()
	resp, err := http.ReadResponse(pc.br, req)
	for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
		// Interim answers (103 Early Hints) come before the real one, and
		// count towards the head's limit.
		resp, err = http.ReadResponse(pc.br, req)
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		err = errors.New("upstream switched protocols unasked")
	}
	if err != nil {
		stop()
		_ = pc.c.Close()
		if pc.readLimit <= 0 {
			err = fmt.Errorf("upstream's answer headers exceeded %d bytes", t.maxHeaderBytes())
		}
		if werr != nil {
			err = werr
		}
		if cerr := ctx.Err(); cerr != nil {
			err = cerr
		}
		return nil, werr == nil, err
	}
	pc.readLimit = math.MaxInt64 // the body is the caller's to bound
	b := &plainBody{rc: resp.Body, pc: pc, t: t, ctx: ctx, host: host, stop: stop, reusable: werr == nil && !resp.Close && !req.Close}
	resp.Body = b
	return resp, true, nil
}

func (t *plainTransport) maxHeaderBytes() int64 {
	if t.maxHeader > 0 {
		return t.maxHeader
	}
	return 10 << 20 // net/http's default
}

// plainBody gives its connection back to the idle list when it has been
// read to its end, and closes it when the body is closed before that.
type plainBody struct {
	rc       io.ReadCloser
	pc       *plainConn
	t        *plainTransport
	ctx      context.Context
	host     string // the idle list pc goes back to
	stop     func() bool
	reusable bool
	done     atomic.Bool
	// atEOF and err are what later Reads return once done: a body cut
	// off, or closed, must not read as one that ended well. Only Read
	// sets them, and Reads do not run at once.
	atEOF bool
	err   error
}

var errReadOnClosedBody = errors.New("read on closed upstream response body")

func (b *plainBody) Read(p []byte) (int, error) {
	if b.done.Load() {
		switch {
		case b.atEOF:
			return 0, io.EOF
		case b.err != nil:
			return 0, b.err
		}
		return 0, errReadOnClosedBody
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.atEOF = true
		b.finish(true)
	} else if err != nil {
		// The context's end reaches the read as a closed connection; the
		// caller is told of the context, as net/http tells it.
		if cerr := b.ctx.Err(); cerr != nil {
			err = cerr
		}
		b.err = err
		b.finish(false)
	}
	return n, err
}

// Close may come from another goroutine while Read waits: closing the
// connection ends that Read.
func (b *plainBody) Close() error {
	b.finish(false)
	return nil
}

// finish ends the body once. The connection stays for the next request
// when the body was read to its end, the server keeps it open, the
// request's context has not ended (stop reports that it had not fired),
// and nothing the server sent past the answer waits in the buffer: the
// next request would read that as its answer, and no peek sees it.
func (b *plainBody) finish(atEOF bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	if b.stop() && atEOF && b.reusable && b.pc.br.Buffered() == 0 {
		b.t.put(b.host, b.pc)
		return
	}
	_ = b.pc.c.Close()
}

// get takes the most recently used live connection to u's host, or dials
// one; reused says the connection served an earlier request.
func (t *plainTransport) get(ctx context.Context, u *url.URL) (*plainConn, bool, error) {
	now := t.now()
	for {
		t.mu.Lock()
		list := t.idle[u.Host]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		pc := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[u.Host] = list[:len(list)-1]
		t.mu.Unlock()
		if now.Sub(pc.idleSince) < t.idleTimeout && connAlive(pc.c) {
			return pc, true, nil
		}
		_ = pc.c.Close()
	}
	pc, err := t.dialConn(ctx, u)
	return pc, false, err
}

func (t *plainTransport) dialConn(ctx context.Context, u *url.URL) (*plainConn, error) {
	c, err := t.dial(ctx, "tcp", dialAddr(u))
	if err != nil {
		return nil, err
	}
	pc := &plainConn{c: c}
	pc.br, pc.bw = bufio.NewReader(pc), bufio.NewWriter(pc)
	return pc, nil
}

// put keeps pc for the next request to host, unless maxIdle are kept
// already.
func (t *plainTransport) put(host string, pc *plainConn) {
	pc.idleSince = t.now()
	t.mu.Lock()
	if len(t.idle[host]) < t.maxIdle {
		t.idle[host] = append(t.idle[host], pc)
		pc = nil
		if !t.pruning {
			t.pruning = true
			time.AfterFunc(t.idleTimeout, t.prune)
		}
	}
	t.mu.Unlock()
	if pc != nil {
		_ = pc.c.Close()
	}
}

// prune closes the connections idle for idleTimeout, the oldest first in
// each list, and runs again while any stay.
func (t *plainTransport) prune() {
	now := t.now()
	var stale []*plainConn
	t.mu.Lock()
	left := 0
	for addr, list := range t.idle {
		n := 0
		for n < len(list) && now.Sub(list[n].idleSince) >= t.idleTimeout {
			n++
		}
		stale = append(stale, list[:n]...)
		clear(list[:n])
		t.idle[addr] = list[n:]
		left += len(list) - n
	}
	t.pruning = left > 0
	if t.pruning {
		time.AfterFunc(t.idleTimeout, t.prune)
	}
	t.mu.Unlock()
	for _, pc := range stale {
		_ = pc.c.Close()
	}
}

// CloseIdleConnections closes the kept-alive connections, here and in
// next; connections serving a request close when it ends.
func (t *plainTransport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = make(map[string][]*plainConn)
	t.mu.Unlock()
	for _, list := range idle {
		for _, pc := range list {
			_ = pc.c.Close()
		}
	}
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
