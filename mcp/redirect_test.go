package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
)

// TestUpstreamRedirectKeepsCredentials (hostile review H7): an upstream
// answering 307 to another origin (an open redirect on the MCP server,
// a compromised path) never gets a person's token, nor the entry's
// shared headers, sent there: not for a call, not for a notification,
// not for the GET event stream, on either HTTP transport. A redirect
// within the server's origin is still followed.
func TestUpstreamRedirectKeepsCredentials(t *testing.T) {
	var mu sync.Mutex
	var leaked []string
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		leaked = append(leaked, r.Header.Get("Authorization")+r.Header.Get("X-Api-Key"))
		mu.Unlock()
		w.WriteHeader(500)
	}))
	defer evil.Close()
	var sameHops int
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/moved" {
			mu.Lock()
			if r.Header.Get("Authorization") == "Bearer at-bob" {
				sameHops++
			}
			mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if r.URL.Query().Get("same") != "" {
			http.Redirect(w, r, "/moved", http.StatusTemporaryRedirect)
			return
		}
		// another origin: the same port under another host name
		http.Redirect(w, r, strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)+"/steal", http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	creds := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer at-bob")
		r.Header.Set("X-Api-Key", "shared-secret")
		return http.DefaultTransport.RoundTrip(r)
	})
	for _, tr := range []string{modellist.MCPTransportHTTP, modellist.MCPTransportSSE} {
		u := &upstream{cfg: &modellist.MCPServer{Name: "gh", URL: up.URL + "/mcp", Transport: tr}}
		var c *http.Client
		switch st := u.transportOver(context.Background(), creds).(type) {
		case *sdk.StreamableClientTransport:
			c = st.HTTPClient
		case *sdk.SSEClientTransport:
			c = st.HTTPClient
		}
		send := func(method, target, body string) {
			req, _ := http.NewRequest(method, target, strings.NewReader(body))
			if body == "" {
				req.Body = nil
				req.Header.Set("Accept", "text/event-stream")
			} else {
				req.Header.Set("Content-Type", "application/json")
			}
			if resp, err := c.Do(req); err == nil {
				resp.Body.Close()
			}
		}
		send(http.MethodPost, up.URL+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize"}`)
		send(http.MethodPost, up.URL+"/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		send(http.MethodGet, up.URL+"/mcp", "")
		send(http.MethodGet, up.URL+"/mcp?same=1", "")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Fatalf("another origin received %q", leaked)
	}
	if sameHops != 2 {
		t.Fatalf("redirects within the origin followed %d times; want one per transport", sameHops)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// BenchmarkSameOrigin is the per-request cost of keeping an upstream's
// requests on its origin: no allocation.
func BenchmarkSameOrigin(b *testing.B) {
	g := originGuard("gh", "https://MCP.example.com/mcp", nil)
	req, _ := http.NewRequest(http.MethodPost, "https://mcp.example.com:443/mcp?x=1", nil)
	b.ReportAllocs()
	for b.Loop() {
		if !g.within(req.URL) {
			b.Fatal("refused its own origin")
		}
	}
}
