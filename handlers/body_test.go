package handlers

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/modelgate/modelgate/policy"
)

func compress(t testing.TB, enc string, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	switch enc {
	case "gzip":
		w := gzip.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "deflate":
		w := zlib.NewWriter(&b)
		w.Write(data)
		w.Close()
	case "zstd":
		w, _ := zstd.NewWriter(&b)
		w.Write(data)
		w.Close()
	}
	return b.Bytes()
}

// zstdWindowed is data as one zstd frame that declares a window of 1<<log
// bytes rather than its content size, as a streaming encoder that does not
// know the length ahead does. The Go encoder shrinks the window of a small
// stream on its own, so the header's window descriptor is set by hand.
func zstdWindowed(t testing.TB, log uint, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := zstd.NewWriter(&b, zstd.WithSingleSegment(false))
	if err != nil {
		t.Fatal(err)
	}
	w.Write(data)
	w.Close()
	frame := b.Bytes()
	var h zstd.Header
	if err := h.Decode(frame); err != nil || h.SingleSegment || h.HasFCS || h.DictionaryID != 0 {
		t.Fatalf("unexpected frame header %+v (%v)", h, err)
	}
	// Magic (4 bytes), frame header descriptor, then the window
	// descriptor: exponent in the high five bits, window log = 10 + exponent.
	frame[5] = byte(log-10) << 3
	return frame
}

func postEncoded(g *Gateway, enc string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", enc)
	req = req.WithContext(policy.WithIdentity(req.Context(), alice))
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec
}

// TestCompressedRequestBodies: bodies sent with Content-Encoding gzip,
// deflate or zstd are decoded; the body limit applies to the decoded size,
// so a decompression bomb is a 413 and the next request is served.
func TestCompressedRequestBodies(t *testing.T) {
	up := newFakeUpstream(t, "m", nil)
	g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) { o.MaxRequestBody = 1 << 20 })
	body := []byte(chatBody("m", false))
	for _, enc := range []string{"gzip", "deflate", "zstd"} {
		if rec := postEncoded(g, enc, compress(t, enc, body)); rec.Code != http.StatusOK || content(t, rec.Body.Bytes()) != reply("m") {
			t.Fatalf("%s: %d %s", enc, rec.Code, rec.Body.String())
		}
		// 64 MiB of spaces inside the JSON: a few KB on the wire.
		bomb := compress(t, enc, []byte(`{"model":"m","messages":[],"pad":"`+strings.Repeat(" ", 64<<20)+`"}`))
		if len(bomb) > 1<<20 {
			t.Fatalf("%s bomb is %d bytes on the wire", enc, len(bomb))
		}
		if rec := postEncoded(g, enc, bomb); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "request_too_large") {
			t.Fatalf("%s bomb: %d %s", enc, rec.Code, rec.Body.String())
		}
		if rec := postEncoded(g, enc, compress(t, enc, body)); rec.Code != http.StatusOK {
			t.Fatalf("%s after the bomb: %d %s", enc, rec.Code, rec.Body.String())
		}
		if rec := postEncoded(g, enc, []byte("not compressed at all")); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "not valid "+enc) {
			t.Fatalf("%s garbage: %d %s", enc, rec.Code, rec.Body.String())
		}
	}
	// A streaming encoder declares its window, not the content size: one
	// within the limit is served, one past it is refused by name.
	if rec := postEncoded(g, "zstd", zstdWindowed(t, 18, body)); rec.Code != http.StatusOK {
		t.Fatalf("zstd with a 256 KiB window: %d %s", rec.Code, rec.Body.String())
	}
	if rec := postEncoded(g, "zstd", zstdWindowed(t, 23, body)); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rec.Body.String(), "window") {
		t.Fatalf("zstd with an 8 MiB window on a 1 MiB limit: %d %s", rec.Code, rec.Body.String())
	}
	if rec := postEncoded(g, "br", body); rec.Code != http.StatusUnsupportedMediaType || !strings.Contains(rec.Body.String(), "gzip, deflate or zstd") {
		t.Fatalf("br: %d %s", rec.Code, rec.Body.String())
	}
}

// gzipBomb is the hostile review's bomb: a chat body whose JSON string
// holds 40 MB of '0', about 39 KB gzipped.
func gzipBomb(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zw.Write([]byte(`{"model":"m","messages":[{"role":"user","content":"`))
	chunk := bytes.Repeat([]byte("0"), 1<<20)
	for range 40 {
		zw.Write(chunk)
	}
	zw.Write([]byte(`"}]}`))
	zw.Close()
	return b.Bytes()
}

// TestBodyMemoryCountsWhatIsAllocated: the body memory a request takes is
// at least what reading its body really allocated, so the gateway-wide
// bound is a bound on the heap, not on a guess of it.
func TestBodyMemoryCountsWhatIsAllocated(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:9"), nil)
	bomb := gzipBomb(t)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec := postEncoded(g, "gzip", bomb)
	runtime.ReadMemStats(&after)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("bomb: %d %s", rec.Code, rec.Body.String())
	}
	used, peak, _ := g.bodyMem.stats()
	if used != 0 {
		t.Fatalf("%d bytes still held after the request ended", used)
	}
	alloc := int64(after.TotalAlloc - before.TotalAlloc)
	// What is not counted: the decoder's window and state, the request
	// and recorder, well under 1 MiB together.
	if peak < alloc-1<<20 {
		t.Fatalf("the request took %d bytes of body memory but allocated %d", peak, alloc)
	}
	// The buffer stops at the limit instead of doubling past it.
	if limit := g.opts.MaxRequestBody; peak > 2*limit+2 {
		t.Fatalf("reading a bomb held %d bytes, more than twice the %d limit", peak, limit)
	}
	t.Logf("one bomb: %d bytes allocated, %d counted", alloc, peak)
}

// TestConcurrentBombsStayWithinBodyMemory is the hostile review's 20
// concurrent gzip bombs: the body memory held at once never passes the
// gateway's bound (the old code held about 64 MiB per bomb, 1.3 GB), and
// each bomb gets its 413, or a 503 with Retry-After when it found no
// room.
func TestConcurrentBombsStayWithinBodyMemory(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:9"), nil)
	bomb := gzipBomb(t)
	var wg sync.WaitGroup
	codes := make([]*httptest.ResponseRecorder, 20)
	for i := range codes {
		wg.Go(func() { codes[i] = postEncoded(g, "gzip", bomb) })
	}
	wg.Wait()
	for i, rec := range codes {
		switch rec.Code {
		case http.StatusRequestEntityTooLarge:
		case http.StatusServiceUnavailable:
			if rec.Header().Get("Retry-After") == "" {
				t.Fatalf("bomb %d: 503 without Retry-After", i)
			}
		default:
			t.Fatalf("bomb %d: %d %s", i, rec.Code, rec.Body.String())
		}
	}
	used, peak, _ := g.bodyMem.stats()
	if used != 0 || peak > g.opts.BodyMemory || g.opts.BodyMemory != 256<<20 {
		t.Fatalf("held %d after, peak %d, bound %d (want the 256 MiB default)", used, peak, g.opts.BodyMemory)
	}
	// Each bomb inflates to the 32 MiB limit: the bound let several run at
	// once (peak past one body's worth) and counted them as they grew.
	if peak <= g.opts.MaxRequestBody {
		t.Fatalf("peak body memory %d: the bombs were not counted as they inflated", peak)
	}
	t.Logf("20 bombs: peak body memory %d MiB of %d", peak>>20, g.opts.BodyMemory>>20)
}

// TestBodyMemoryFullAnswers503: a request that finds the body memory full
// waits for room; one that finds none in time gets a 503 with Retry-After
// in its client's error family, and is served once room is back.
func TestBodyMemoryFullAnswers503(t *testing.T) {
	up := newFakeUpstream(t, "m", nil)
	g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), func(o *GatewayOptions) { o.BodyMemoryWait = time.Millisecond })
	m := g.bodyMem
	if !m.acquire(context.Background(), m.max, time.Now()) {
		t.Fatal("could not fill the body memory")
	}
	post := func(path, body string, h ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		for i := 0; i+1 < len(h); i += 2 {
			req.Header.Set(h[i], h[i+1])
		}
		req = req.WithContext(policy.WithIdentity(req.Context(), alice))
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		return rec
	}
	rec := post("/v1/chat/completions", chatBody("m", false))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
		!strings.Contains(rec.Body.String(), `"code":"body_memory_full"`) {
		t.Fatalf("chat while full: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}
	rec = post("/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, "anthropic-version", "2023-06-01")
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "1" ||
		!strings.Contains(rec.Body.String(), `"type":"error"`) {
		t.Fatalf("messages while full: %d %v %s", rec.Code, rec.Header(), rec.Body.String())
	}

	// A request that waits gets the room given back while it waits.
	g.opts.BodyMemoryWait = time.Minute
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- post("/v1/chat/completions", chatBody("m", false)) }()
	for {
		if _, _, waiting := m.stats(); waiting > 0 {
			break
		}
		runtime.Gosched()
	}
	m.release(m.max)
	if rec := <-done; rec.Code != http.StatusOK {
		t.Fatalf("after room came back: %d %s", rec.Code, rec.Body.String())
	}
	if used, _, _ := m.stats(); used != 0 {
		t.Fatalf("%d bytes held after every request ended", used)
	}
}

// FuzzReadBody: whatever the bytes and encoding, reading a body either
// fails with a client error or yields exactly what the encoding's own
// decoder yields (within the limit), and gives back every byte of body
// memory it took.
func FuzzReadBody(f *testing.F) {
	f.Add([]byte(`{"model":"m"}`), uint8(0), false)
	f.Add(compress(f, "gzip", []byte(`{"model":"m","pad":"`+strings.Repeat("0", 5000)+`"}`)), uint8(1), false)
	f.Add(compress(f, "deflate", []byte(`{"model":"m"}`)), uint8(2), true)
	f.Add(compress(f, "zstd", []byte(strings.Repeat("x", 3000))), uint8(3), false)
	f.Add(zstdWindowed(f, 16, []byte(`{"model":"m"}`)), uint8(3), false)
	const limit = 4 << 10
	g, _ := testGateway(f, "model_list:\n"+entry("m", "http://127.0.0.1:9"), func(o *GatewayOptions) { o.MaxRequestBody = limit })
	encs := []string{"", "gzip", "deflate", "zstd"}
	f.Fuzz(func(t *testing.T, wire []byte, e uint8, chunked bool) {
		enc := encs[int(e)%len(encs)]
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(wire))
		if chunked {
			r.ContentLength = -1
		}
		if enc != "" {
			r.Header.Set("Content-Encoding", enc)
		}
		req := &clientRequest{buf: g.bodyPool.Get().(*[]byte)}
		// Released whatever this input's verdict: a failure that left its
		// memory held would show as a leak on every later input the
		// fuzzer minimizes against, hiding the failure itself.
		released := false
		defer func() {
			if !released {
				g.releaseRequest(req)
			}
		}()
		apiErr := g.readBody(httptest.NewRecorder(), r, req)
		var want []byte
		var werr error
		switch enc {
		case "":
			want = wire
		case "gzip":
			var zr *gzip.Reader
			if zr, werr = gzip.NewReader(bytes.NewReader(wire)); werr == nil {
				want, werr = io.ReadAll(io.LimitReader(zr, limit+1))
			}
		case "deflate":
			var zr io.ReadCloser
			if zr, werr = zlib.NewReader(bytes.NewReader(wire)); werr == nil {
				want, werr = io.ReadAll(io.LimitReader(zr, limit+1))
			}
		case "zstd":
			var d *zstd.Decoder
			if d, werr = zstd.NewReader(bytes.NewReader(wire), zstd.WithDecoderConcurrency(1)); werr == nil {
				want, werr = io.ReadAll(io.LimitReader(d, limit+1))
				d.Close()
			}
			// A frame declaring a window past the limit is refused
			// however little it decodes to (its history would be
			// allocated outside the body memory bound).
			if werr == nil && apiErr != nil && strings.Contains(apiErr.Message, "window") {
				if d, err := zstd.NewReader(bytes.NewReader(wire), zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(limit)); err == nil {
					_, err = io.ReadAll(io.LimitReader(d, limit+1))
					d.Close()
					if errors.Is(err, zstd.ErrWindowSizeExceeded) {
						werr = err
					}
				}
			}
		}
		switch {
		case apiErr == nil:
			if werr != nil || !bytes.Equal(req.body, want) {
				t.Fatalf("%s: read %q, the decoder gives %q (%v)", enc, req.body, want, werr)
			}
		case apiErr.Status == http.StatusRequestEntityTooLarge, apiErr.Status == http.StatusBadRequest:
			if werr == nil && len(want) <= limit && apiErr.Status == http.StatusRequestEntityTooLarge {
				t.Fatalf("%s: 413 for %d decoded bytes", enc, len(want))
			}
		default:
			t.Fatalf("%s: %d %s", enc, apiErr.Status, apiErr.Message)
		}
		g.releaseRequest(req)
		released = true
		if used, _, _ := g.bodyMem.stats(); used != 0 {
			t.Fatalf("%d bytes of body memory held after release", used)
		}
	})
}

// TestOutgrownBuffersAreGivenBack: a body of unknown length grows its
// buffer as it arrives; once read, only the final buffer stays counted for
// the rest of the request (a stream may run for minutes), not the ones it
// outgrew.
func TestOutgrownBuffersAreGivenBack(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:9"), nil)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 300<<10) + `"}]}`)
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	r.ContentLength = -1 // chunked: the size is learnt as it arrives
	req := &clientRequest{buf: g.bodyPool.Get().(*[]byte)}
	if apiErr := g.readBody(httptest.NewRecorder(), r, req); apiErr != nil {
		t.Fatal(apiErr.Message)
	}
	used, _, _ := g.bodyMem.stats()
	if used != int64(cap(req.body)) || used != req.held {
		t.Fatalf("after reading %d bytes: %d counted, %d held, final buffer %d; want only the final buffer", len(body), used, req.held, cap(req.body))
	}
	g.releaseRequest(req)
	if used, _, _ := g.bodyMem.stats(); used != 0 {
		t.Fatalf("%d held after release", used)
	}
}

// TestDeclaredLengthTakesNoMemoryUpFront: a client that declares a large
// Content-Length and sends nothing yet holds at most a first slice of the
// body memory, not the whole declared size.
func TestDeclaredLengthTakesNoMemoryUpFront(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:9"), nil)
	pr, pw := io.Pipe()
	defer pw.Close()
	r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", pr)
	r.ContentLength = 30 << 20
	req := &clientRequest{buf: g.bodyPool.Get().(*[]byte)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = g.readBody(httptest.NewRecorder(), r, req)
	}()
	if _, err := pw.Write([]byte(`{"model":`)); err != nil { // the reader is now waiting for more
		t.Fatal(err)
	}
	used, _, _ := g.bodyMem.stats()
	if used > maxUpfrontBody+minBodyBuffer {
		t.Errorf("a trickling body declared at 30 MiB holds %d bytes of body memory", used)
	}
	pw.CloseWithError(io.ErrUnexpectedEOF)
	<-done
	g.releaseRequest(req)
}
