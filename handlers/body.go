package handlers

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/modelgate/modelgate/providers"
)

// readBody reads the client's body into buf, decoding a Content-Encoding
// of gzip, deflate or zstd. max_request_body bounds both the bytes on the
// wire and the decoded size, so a small compressed body that inflates past
// the limit (a decompression bomb) is a 413 after reading no more than the
// limit, and the next request is served as usual.
func (g *Gateway) readBody(w http.ResponseWriter, r *http.Request, buf *bytes.Buffer) *providers.APIError {
	limit := g.opts.MaxRequestBody
	tooLarge := func() *providers.APIError {
		return &providers.APIError{Status: http.StatusRequestEntityTooLarge, Code: "request_too_large", Message: g.tooLarge}
	}
	if r.ContentLength > limit {
		return tooLarge()
	}
	wire := http.MaxBytesReader(w, r.Body, limit)
	var src io.Reader = wire
	enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch enc {
	case "", "identity":
		if r.ContentLength > 0 {
			buf.Grow(int(r.ContentLength) + 1)
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
	if src != io.Reader(wire) {
		// Decoded bytes are bounded separately: the wire limit says
		// nothing about what they inflate to.
		src = io.LimitReader(src, limit+1)
	}
	n, err := buf.ReadFrom(src)
	if err != nil {
		return bodyDecodeError(enc, err, tooLarge)
	}
	if n > limit {
		return tooLarge()
	}
	return nil
}

func bodyDecodeError(enc string, err error, tooLarge func() *providers.APIError) *providers.APIError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
		return tooLarge()
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
