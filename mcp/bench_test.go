package mcp

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// BenchmarkToolCall is one tools/call over Streamable HTTP on loopback,
// from the Go SDK client to a Go SDK server: direct, and through the
// gateway (auth identity, allow-list, the upstream session, the record).
// The difference is the gateway's cost per call. "session-per-call" is
// the alternative to one shared upstream session: a fresh session
// (initialize, initialized, call, DELETE) for each call, direct.
func BenchmarkToolCall(b *testing.B) {
	up := upstreamServer(b, "tok")
	g := New(Options{Servers: []*modellist.MCPServer{{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL, Headers: map[string]string{"Authorization": "Bearer tok"}}}})
	g.Start()
	defer g.Close()
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"k": {KeyID: "k"}}))
	defer gw.Close()

	for _, c := range []struct{ name, url, key, tool string }{
		{"direct", up.URL, "tok", "echo"},
		{"gateway", gw.URL + "/mcp", "k", "internal-echo"},
		{"session-per-call", up.URL, "tok", "echo"},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if c.name == "session-per-call" {
				b.ReportAllocs()
				for b.Loop() {
					cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: c.url, HTTPClient: &http.Client{Transport: bearer{c.key}}, DisableStandaloneSSE: true}, nil)
					if err != nil {
						b.Fatal(err)
					}
					if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: map[string]any{"text": "hi"}}); err != nil || res.IsError {
						b.Fatalf("%+v %v", res, err)
					}
					cs.Close()
				}
				return
			}
			cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench"}, nil).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: c.url, HTTPClient: &http.Client{Transport: bearer{c.key}}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			for range 100 {
				if res, err := cs.ListTools(ctx, nil); err == nil && len(res.Tools) > 0 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			args := map[string]any{"text": "hi"}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: args})
				if err != nil || res.IsError {
					b.Fatalf("%+v %v", res, err)
				}
			}
		})
	}
}

// BenchmarkAnswerCheck is answerGuard's check of one call's JSON answer
// (read, bounded, and decoded once more than the SDK does), beside the
// SDK's own decode of it: the guard's cost per call by answer size.
func BenchmarkAnswerCheck(b *testing.B) {
	id, err := jsonrpc.MakeID(float64(3))
	if err != nil {
		b.Fatal(err)
	}
	g := answerGuard{max: maxAnswer}
	for _, n := range []int{100, 64 << 10, 1 << 20} {
		body := []byte(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + strings.Repeat("a", n) + `"}]}}`)
		b.Run(fmt.Sprintf("guard-%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := g.checkJSON(bytes.NewReader(body), int64(len(body)), id); !ok {
					b.Fatal("a good answer was refused")
				}
			}
		})
		b.Run(fmt.Sprintf("sdk-decode-%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := jsonrpc.DecodeMessage(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
