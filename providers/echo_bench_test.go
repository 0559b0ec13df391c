package providers

import (
	"bytes"
	"io"
	"net/http"
	"testing"
)

func BenchmarkEchoNonStream(b *testing.B) {
	body := []byte(`{"model":"echo/bench","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hello there, how are you doing today?"}]}`)
	req, err := http.NewRequest(http.MethodPost, "http://echo.internal/v1/chat/completions", nil)
	if err != nil {
		b.Fatal(err)
	}
	var sink bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		req.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := EchoTransport{}.RoundTrip(req)
		if err != nil {
			b.Fatal(err)
		}
		sink.Reset()
		if _, err := sink.ReadFrom(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
			b.Fatal(resp.StatusCode, err)
		}
		resp.Body.Close()
	}
}
