package handlers

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/modelgate/modelgate/providers"
)

// readBody reads the client's body into req, decoding a Content-Encoding
// of gzip, deflate or zstd. max_request_body bounds both the bytes on the
// wire and the decoded size, so a small compressed body that inflates past
// the limit (a decompression bomb) is a 413 after reading no more than the
// limit, and the next request is served as usual. Every buffer it
// allocates is taken from the gateway's body memory first (req.held says
// how much, releaseRequest gives it back); a request that finds no room
// within the gateway's wait gets a 503 with Retry-After.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, req *clientRequest) *providers.APIError {
	limit := g.opts.MaxRequestBody
	tooLarge := func() *providers.APIError {
		return &providers.APIError{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large", Message: g.tooLarge}
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	wire := http.MaxBytesReader(w, r.Body, limit)
	var src io.Reader = wire
	// want is the first buffer's size: the whole body when its length is
	// known, else a guess that doubles as the body turns out longer.
	want := int64(minBodyBuffer)
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		if r.ContentLength > 0 {
			// One more byte than the body, so reading it to its end
			// needs no second buffer; but no more than a first slice
			// before the bytes arrive, or a client that declares 32 MiB
			// and trickles them would hold the body memory of many.
			want = min(r.ContentLength+1, maxUpfrontBody)
		}
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(wire)
		if err != nil {
			return bodyDecodeError(enc, err, tooLarge)
		}
		src = zr
	case "deflate":
		// HTTP's deflate is the zlib format (RFC 9110 §8.4.1.2).
		zr, err := zlib.NewReader(wire)
		if err != nil {
			return bodyDecodeError(enc, err, tooLarge)
		}
		defer zr.Close()
		src = zr
	case "zstd":
		d := g.zstdPool.Get().(*zstd.Decoder)
		if err := d.Reset(wire); err != nil {
			g.zstdPool.Put(d)
			return bodyDecodeError(enc, err, tooLarge)
		}
		defer func() { _ = d.Reset(nil); g.zstdPool.Put(d) }()
		src = d
	default:
		return &providers.APIError{Status: http.StatusUnsupportedMediaType, Code: "unsupported_content_encoding",
			Message: "Content-Encoding " + enc + " is not supported; send the body plain or as gzip, deflate or zstd"}
	}
	return g.readBounded(r.Context(), src, want, enc, req)
}

// readCallBody reads c's body into req: from its source (the HTTP door
// reads the request's own body), or copied from c.Body for a way in that
// holds it already, bounded and counted alike.
func (g *Gateway) readCallBody(ctx context.Context, c *Call, req *clientRequest) *providers.APIError {
	if c.source != nil {
		return c.source.readBody(g, req)
	}
	want := min(int64(len(c.Body))+1, maxUpfrontBody)
	return g.readBounded(ctx, bytes.NewReader(c.Body), want, "", req)
}

// readBounded reads src to its end into req's buffer under
// max_request_body, taking every buffer it allocates from the gateway's
// body memory first. want is the first buffer's size; enc names src's
// encoding in errors. An HTTP body and a WebSocket message are read by it
// alike.
func (g *Gateway) readBounded(ctx context.Context, src io.Reader, want int64, enc string, req *clientRequest) *providers.APIError {
	limit := g.opts.MaxRequestBody
	tooLarge := func() *providers.APIError {
		return &providers.APIError{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large", Message: g.tooLarge}
	}
	deadline := g.now().Add(g.opts.BodyMemoryWait)
	grow := func(b []byte, size int64) ([]byte, *providers.APIError) {
		if !g.bodyMem.acquire(ctx, size, deadline) {
			return b, &providers.APIError{Status: http.StatusServiceUnavailable, Code: "body_memory_full", RetryAfter: "1",
				Message: g.memoryFull}
		}
		req.held += size
		nb := make([]byte, len(b), size)
		copy(nb, b)
		return nb, nil
	}
	// The pooled buffer is memory this request holds too.
	b := (*req.buf)[:0]
	if c := int64(cap(b)); c > 0 {
		if !g.bodyMem.acquire(ctx, c, deadline) {
			return &providers.APIError{Status: http.StatusServiceUnavailable, Code: "body_memory_full", RetryAfter: "1",
				Message: g.memoryFull}
		}
		req.held += c
	}
	defer func() { *req.buf = b }()
	for {
		if len(b) == cap(b) {
			// Double, but never past the limit plus the one byte that
			// tells a body at the limit from a longer one; a doubling
			// that would reach the limit goes there at once, so no
			// buffer is outgrown by one byte.
			size := 2 * int64(cap(b))
			if int64(cap(b)) < want {
				size = want
			}
			if size >= limit {
				size = limit + 1
			}
			var apiErr *providers.APIError
			if b, apiErr = grow(b, size); apiErr != nil {
				return apiErr
			}
		}
		n, err := src.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > limit {
			return tooLarge()
		}
		if err == io.EOF {
			req.body = b
			// The buffers b outgrew are garbage now: only b stays counted
			// while the request runs (a stream may run for minutes).
			if live := int64(cap(b)); req.held > live {
				g.bodyMem.release(req.held - live)
				req.held = live
			}
			return nil
		}
		if err != nil {
			return bodyDecodeError(enc, err, tooLarge)
		}
	}
}

// maxUpfrontBody bounds what a declared Content-Length takes from the body
// memory before any of its bytes arrived; larger bodies grow as they come.
const maxUpfrontBody = 1 << 20

// minBodyBuffer is the first buffer for a body of unknown length.
const minBodyBuffer = 16 << 10

func bodyDecodeError(enc string, err error, tooLarge func() *providers.APIError) *providers.APIError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, zstd.ErrDecoderSizeExceeded) {
		return tooLarge()
	}
	if errors.Is(err, zstd.ErrWindowSizeExceeded) {
		// The frame asks the decoder to hold more history than the body
		// may be long. Honouring it would let a few bytes of header
		// allocate up to 128 MiB each, outside the body memory bound, so
		// the frame is refused however little it decodes to; the message
		// says so, since "too large" would puzzle a client that sent 1 KB.
		e := tooLarge()
		e.Message = "the zstd frame declares a window larger than this gateway's max_request_body; compress with a window no larger than the body limit (for example a single-segment frame)"
		return e
	}
	if enc == "" || enc == "identity" {
		return &providers.APIError{Status: http.StatusBadRequest, Message: "reading request body: " + err.Error()}
	}
	return &providers.APIError{Status: http.StatusBadRequest, Message: "request body is not valid " + enc + ": " + err.Error()}
}

// newZstdDecoder makes a decoder for one request at a time whose memory is
// bounded by the body limit.
func newZstdDecoder(limit int64) *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(uint64(limit)+1), zstd.WithDecoderMaxWindow(uint64(min(limit, 1<<27))))
	if err != nil {
		// Only invalid options fail, and these are fixed.
		panic(err)
	}
	return d
}
