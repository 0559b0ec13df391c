package handlers

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// BenchmarkReadRequestBody is the body read path alone (read, decode,
// depth check, peek, release) for plain and gzip bodies of a typical
// and a large size.
func BenchmarkReadRequestBody(b *testing.B) {
	g, _ := testGateway(b, "model_list:\n"+entry("m", "http://127.0.0.1:9"), nil)
	id := &policy.Identity{KeyID: "bench", Role: policy.RoleUser}
	ctx := policy.WithIdentity(context.Background(), id)
	for _, size := range []int{64 << 10, 4 << 20} {
		body := []byte(`{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("lorem ipsum ", size/12) + `"}]}`)
		for _, enc := range []string{"", "gzip"} {
			wire := body
			if enc != "" {
				wire = compress(b, enc, body)
			}
			name := map[int]string{64 << 10: "64KB", 4 << 20: "4MB"}[size] + "-" + map[string]string{"": "plain", "gzip": "gzip"}[enc]
			b.Run(name, func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", bytes.NewReader(wire))
					if enc != "" {
						r.Header.Set("Content-Encoding", enc)
					}
					d := newHTTPDoor(httptest.NewRecorder(), r, providers.FormatOpenAI, providers.FormatOpenAI)
					d.call.Identity = id
					req, ok := g.readRequest(ctx, &d.call, d)
					if !ok {
						b.Fatal("read failed")
					}
					g.releaseRequest(req)
				}
			})
		}
	}
}
