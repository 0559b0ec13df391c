package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
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

// badAnswers are the tools whose answers badAnswerServer replaces, and what
// each answer is.
var badAnswers = map[string]string{
	"badjson":    "a truncated JSON-RPC body",
	"wrongid":    "a result for another request id",
	"hugejson":   "a JSON body over the answer bound",
	"hugesse":    "an SSE event over the answer bound",
	"ssegarbage": "an SSE event whose data is not JSON",
	"ssenofield": "an SSE line that is not a field",
	"status500":  "HTTP 500 with a plain-text body",
	"status400":  "HTTP 400 with a JSON-RPC error",
	"html":       "an HTML page with status 200",
	"accepted":   "202 Accepted with no body",
	"session":    "a good answer naming another session",
}

// badAnswerServer is one real Go SDK server with a healthy echo, a slow
// tool that answers once release is closed (started is signalled when it
// begins), and the badAnswers tools, whose tools/call answers the handler
// in front replaces with garbage.
func badAnswerServer(t *testing.T, started chan<- struct{}, release <-chan struct{}) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: "hostile"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo:" + in.Text}}}, nil, nil
	})
	sdk.AddTool(s, &sdk.Tool{Name: "slow"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		started <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "slow done"}}}, nil, nil
	})
	for name := range badAnswers {
		sdk.AddTool(s, &sdk.Tool{Name: name}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "never served"}}}, nil, nil
		})
	}
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	huge := strings.Repeat("x", maxAnswer+1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if _, bad := badAnswers[msg.Params.Name]; msg.Method != "tools/call" || !bad {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		result := func(text string) string {
			return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":%q}]}}`, msg.ID, text)
		}
		switch msg.Params.Name {
		case "badjson":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"result":{"content":[`)
		case "wrongid":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":987654,"result":{"content":[]}}`)
		case "hugejson":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, result(huge))
		case "hugesse":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message\ndata: "+result(huge)+"\n\n")
		case "ssegarbage":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(msg.ID)+",\"res\n\n")
		case "status500":
			http.Error(w, "internal error", http.StatusInternalServerError)
		case "status400":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(msg.ID)+`,"error":{"code":-32602,"message":"bad answer from the MCP server, says the server"}}`)
		case "html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body>502 Bad Gateway</body></html>")
		case "accepted":
			w.WriteHeader(http.StatusAccepted)
		case "session":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "another-session")
			_, _ = io.WriteString(w, result("fine"))
		case "ssenofield":
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "<html>502 Bad Gateway</html>\n\n")
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestBadAnswerFailsOneCall: over one shared upstream session, a tool
// answered with a truncated body, another request's id, an oversized
// answer (JSON or SSE) or an unparseable SSE event fails that call alone,
// at once: another key's call already in flight finishes, and its calls
// made after each bad answer succeed.
func TestBadAnswerFailsOneCall(t *testing.T) {
	started, release := make(chan struct{}, 1), make(chan struct{})
	up := badAnswerServer(t, started, release)
	// Cleanups run last first: the slow call ends before its server closes.
	var freed sync.Once
	free := func() { freed.Do(func() { close(release) }) }
	t.Cleanup(free)
	obs := &recObs{}
	mallory, bob := hostileSessions(t, up.URL, obs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	slow := make(chan error, 1)
	go func() {
		res, err := bob.CallTool(ctx, &sdk.CallToolParams{Name: "hostile-slow", Arguments: map[string]any{}})
		if err == nil && (res.IsError || res.Content[0].(*sdk.TextContent).Text != "slow done") {
			err = fmt.Errorf("answered %+v", res)
		}
		slow <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the slow call never reached the server")
	}

	for name, what := range badAnswers {
		start := time.Now()
		res, err := mallory.CallTool(ctx, &sdk.CallToolParams{Name: "hostile-" + name, Arguments: map[string]any{}})
		if err == nil {
			t.Fatalf("%s (%s): answered %+v", name, what, res)
		}
		if took := time.Since(start); took > 5*time.Second || !strings.Contains(err.Error(), "bad answer from the MCP server") {
			t.Fatalf("%s (%s): after %s: %v", name, what, took, err)
		}
		t.Logf("%s: %v", name, err)
		res, err = bob.CallTool(ctx, &sdk.CallToolParams{Name: "hostile-echo", Arguments: map[string]any{"text": name}})
		if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "echo:"+name {
			t.Fatalf("bob's call after %s (%s): %+v %v", name, what, res, err)
		}
	}
	free()
	select {
	case err := <-slow:
		if err != nil {
			t.Fatalf("bob's call in flight during the bad answers: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("bob's call in flight never finished")
	}

	obs.mu.Lock()
	defer obs.mu.Unlock()
	errs := 0
	for _, c := range obs.calls {
		if c.KeyID == "k-mallory" {
			if c.Outcome != "error" {
				t.Errorf("mallory's call recorded as %+v", c)
			}
			errs++
		}
	}
	if errs != len(badAnswers) {
		t.Fatalf("%d of mallory's calls recorded, want %d: %+v", errs, len(badAnswers), obs.calls)
	}
}

// TestLegacySSEServer: a server on the legacy SSE transport (one GET
// stream for every answer, which the guard reads as a stream with no call)
// is listed and called through the gateway. The stream lives as long as
// the session, not as long as the connect's deadline.
func TestLegacySSEServer(t *testing.T) {
	s := sdk.NewServer(&sdk.Implementation{Name: "legacy"}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo:" + in.Text}}}, nil, nil
	})
	up := httptest.NewServer(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return s }, nil))
	t.Cleanup(up.Close)
	g := New(Options{Observer: upLog{t}, Servers: []*modellist.MCPServer{{Name: "legacy", Transport: modellist.MCPTransportSSE, URL: up.URL}}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"k": {KeyID: "k"}}))
	t.Cleanup(gw.Close)
	cs := connect(t, gw.URL+"/mcp", "k")
	waitTools(t, cs, 1)
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "legacy-echo", Arguments: map[string]any{"text": "old"}})
	if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != "echo:old" {
		t.Fatalf("%+v %v", res, err)
	}
}

type upLog struct{ t *testing.T }

func (upLog) ToolCall(context.Context, Call) {}
func (o upLog) Upstream(s string, err error) { o.t.Logf("%s: %v", s, err) }
func (upLog) Stderr(string, string)          {}
func (upLog) Ignored(string, string)         {}

// hostileSessions serves a gateway whose one server "hostile" is at url
// and returns mallory's and bob's sessions on it, once bob sees its tools.
func hostileSessions(t *testing.T, url string, obs Observer) (mallory, bob *sdk.ClientSession) {
	t.Helper()
	g := New(Options{Observer: obs, Timeout: 20 * time.Second, Servers: []*modellist.MCPServer{
		{Name: "hostile", Transport: modellist.MCPTransportHTTP, URL: url},
	}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"mallory": {KeyID: "k-mallory"}, "bob": {KeyID: "k-bob"}}))
	t.Cleanup(gw.Close)
	mallory, bob = connect(t, gw.URL+"/mcp", "mallory"), connect(t, gw.URL+"/mcp", "bob")
	waitTools(t, bob, 2+len(badAnswers))
	return mallory, bob
}
