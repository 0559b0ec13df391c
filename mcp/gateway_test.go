package mcp

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

type echoIn struct {
	Text string `json:"text"`
}

// upstreamServer is a Go SDK server behind a bearer token, as a team's
// internal tool server would be.
func upstreamServer(t testing.TB, token string) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "internal"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "echoes"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo:" + in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "secret"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "never"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

type recObs struct {
	mu    sync.Mutex
	calls []Call
}

func (o *recObs) ToolCall(_ context.Context, c Call) {
	o.mu.Lock()
	o.calls = append(o.calls, c)
	o.mu.Unlock()
}
func (o *recObs) Upstream(string, error) {}
func (o *recObs) Stderr(string, string)  {}
func (o *recObs) Ignored(string, string) {}

// withID stands in for llm_auth: it attaches the identity for the bearer.
func withID(h http.Handler, ids map[string]*policy.Identity) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := ids[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]
		if id == nil {
			http.Error(w, "no key", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r.WithContext(policy.WithIdentity(r.Context(), id)))
	})
}

type bearer struct{ key string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return http.DefaultTransport.RoundTrip(r)
}

func connect(t *testing.T, url, key string) *sdk.ClientSession {
	t.Helper()
	return connectWith(t, url, key, nil)
}

// connectWith connects a client with opts (its handlers for the server's
// requests and notifications).
func connectWith(t *testing.T, url, key string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test"}, opts).Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{key}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func waitTools(t *testing.T, cs *sdk.ClientSession, want int) []string {
	t.Helper()
	var names []string
	for range 100 {
		names = names[:0]
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		if len(names) >= want {
			return names
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("tools %v, want %d", names, want)
	return nil
}

func TestGatewayAggregatesAndAllows(t *testing.T) {
	up := upstreamServer(t, "upstream-token")
	obs := &recObs{}
	g := New(Options{Observer: obs, Servers: []*modellist.MCPServer{
		{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL, Headers: map[string]string{"Authorization": "Bearer upstream-token"}},
		{Name: "dead", Transport: modellist.MCPTransportHTTP, URL: "http://127.0.0.1:1/mcp"},
	}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{
		"all":  {KeyID: "k-all"},
		"echo": {KeyID: "k-echo", Workspace: "w1", MCP: []string{"internal/echo"}},
	}))
	t.Cleanup(gw.Close)

	all := connect(t, gw.URL+"/mcp", "all")
	names := waitTools(t, all, 2)
	if strings.Join(names, ",") != "internal-echo,internal-secret" {
		t.Fatalf("aggregate tools %v", names)
	}
	res, err := all.CallTool(context.Background(), &sdk.CallToolParams{Name: "internal-echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "echo:hi" {
		t.Fatalf("call %+v %v", res, err)
	}
	if _, err := all.CallTool(context.Background(), &sdk.CallToolParams{Name: "nosuch-tool"}); err == nil || !strings.Contains(err.Error(), "nosuch-tool") {
		t.Fatalf("unknown tool: %v", err)
	}

	one := connect(t, gw.URL+"/mcp/internal", "echo")
	names = waitTools(t, one, 1)
	if strings.Join(names, ",") != "echo" {
		t.Fatalf("allow-listed tools %v", names)
	}
	_, err = one.CallTool(context.Background(), &sdk.CallToolParams{Name: "secret", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("disallowed tool: %v", err)
	}

	obs.mu.Lock()
	defer obs.mu.Unlock()
	// The two refused calls are recorded too: the unknown name as "(unknown)", the
	// real one by name.
	if len(obs.calls) != 3 || obs.calls[1].Tool != "(unknown)" || obs.calls[1].Requested != "nosuch-tool" || obs.calls[1].Outcome != "denied" ||
		obs.calls[2].Server != "internal" || obs.calls[2].Tool != "secret" || obs.calls[2].Outcome != "denied" || obs.calls[2].KeyID != "k-echo" {
		t.Fatalf("refused calls %+v", obs.calls)
	}
	if obs.calls[0].Server != "internal" || obs.calls[0].Tool != "echo" || obs.calls[0].KeyID != "k-all" || obs.calls[0].Outcome != "ok" || obs.calls[0].Bytes == 0 || obs.calls[0].Session == "" {
		t.Fatalf("ledger calls %+v", obs.calls)
	}
}
