package handlers

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

func compress(t *testing.T, enc string, data []byte) []byte {
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

func postEncoded(g *Gateway, enc string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Content-Encoding", enc)
	req = req.WithContext(WithIdentity(req.Context(), alice))
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
	if rec := postEncoded(g, "br", body); rec.Code != http.StatusUnsupportedMediaType || !strings.Contains(rec.Body.String(), "gzip, deflate or zstd") {
		t.Fatalf("br: %d %s", rec.Code, rec.Body.String())
	}
}
