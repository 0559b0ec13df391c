package upstream

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
)

type postTestKey struct{}

// TestNewPostAsNewRequest: a request built from a kept URL is the one
// http.NewRequestWithContext builds (address, host, body, length,
// GetBody, context); URLs with a query are not kept, nor more than the
// bound.
func TestNewPostAsNewRequest(t *testing.T) {
	var targets postTargets
	ctx := context.WithValue(context.Background(), postTestKey{}, "ctx")
	body := []byte(`{"model":"m"}`)
	for _, raw := range []string{"http://127.0.0.1:8080/v1/chat/completions", "https://user:pw@api.example.com:/v1/messages", "http://h/v1/messages?beta=true"} {
		for range 2 { // made, then kept
			got, err := targets.newPost(ctx, raw, body)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := http.NewRequestWithContext(ctx, http.MethodPost, raw, nil)
			if got.URL.String() != want.URL.String() || got.Host != want.Host || got.Method != http.MethodPost || got.Context() != ctx {
				t.Fatalf("%s: got %s host %q, want %s host %q", raw, got.URL, got.Host, want.URL, want.Host)
			}
			if got.ContentLength != int64(len(body)) || got.GetBody == nil {
				t.Fatalf("%s: length %d, GetBody %v", raw, got.ContentLength, got.GetBody != nil)
			}
			for _, r := range []func() (io.ReadCloser, error){func() (io.ReadCloser, error) { return got.Body, nil }, got.GetBody} {
				rc, _ := r()
				if b, _ := io.ReadAll(rc); string(b) != string(body) {
					t.Fatalf("%s: body %q", raw, b)
				}
			}
			got.URL.Path = "/changed" // a request's URL is its own
		}
	}
	if _, kept := targets.m.Load("http://h/v1/messages?beta=true"); kept {
		t.Error("a URL with a query was kept")
	}
	for i := range maxPostTargets + 10 {
		if _, err := targets.newPost(ctx, fmt.Sprintf("http://h/%d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := targets.n.Load(); n != maxPostTargets {
		t.Errorf("%d URLs kept, bound %d", n, maxPostTargets)
	}
	if _, err := targets.newPost(ctx, "http://bad host/", nil); err == nil {
		t.Error("a bad URL made a request")
	}
}
