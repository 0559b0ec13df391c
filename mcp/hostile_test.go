package mcp

import (
	"bytes"
	"context"
	"encoding/json"
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

// hostileServer is a real Go SDK server whose tools/call answers are
// replaced by garbage of the given kind: "hang" never answers, "html" is
// an HTML page, "badjson" is not JSON, "wrongid" is a result for another
// request id.
func hostileServer(t *testing.T, kind string) *httptest.Server {
	s := sdk.NewServer(&sdk.Implementation{Name: kind}, nil)
	sdk.AddTool(s, &sdk.Tool{Name: "work"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "fine"}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s }, nil)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method != "tools/call" {
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(w, r)
			return
		}
		switch kind {
		case "hang":
			<-r.Context().Done()
		case "html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html><body>502 Bad Gateway</body></html>"))
		case "badjson":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":`))
		case "wrongid":
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"jsonrpc":"2.0","id":987654,"result":{"content":[]}}`))
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestHostileServers: a server that stops answering, or answers a tool
// call with HTML, broken JSON or another request's id, fails that call
// with an MCP error within its timeout, while a healthy server's calls go
// on answering during it.
func TestHostileServers(t *testing.T) {
	kinds := []string{"hang", "html", "badjson", "wrongid"}
	servers := []*modellist.MCPServer{{Name: "good", Transport: modellist.MCPTransportHTTP, URL: upstreamServer(t, "tok").URL, Headers: map[string]string{"Authorization": "Bearer tok"}}}
	for _, k := range kinds {
		servers = append(servers, &modellist.MCPServer{Name: k, Transport: modellist.MCPTransportHTTP, URL: hostileServer(t, k).URL, Timeout: time.Second})
	}
	obs := &recObs{}
	g := New(Options{Servers: servers, Observer: obs})
	g.Start()
	t.Cleanup(g.Close)
	var mu sync.Mutex
	var statuses []int
	gw := httptest.NewServer(withID(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		g.ServeHTTP(rec, r)
		mu.Lock()
		statuses = append(statuses, rec.status)
		mu.Unlock()
	}), map[string]*policy.Identity{"all": {KeyID: "k"}}))
	t.Cleanup(gw.Close)
	cs := connect(t, gw.URL+"/mcp", "all")
	waitTools(t, cs, 2+len(kinds))

	ctx := context.Background()
	done := make(chan struct{})
	for _, k := range kinds {
		go func() {
			defer func() { done <- struct{}{} }()
			start := time.Now()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: k + "-work", Arguments: map[string]any{}})
			took := time.Since(start)
			if err == nil {
				t.Errorf("%s: answered %+v", k, res)
				return
			}
			if !strings.Contains(err.Error(), k) || took > 3*time.Second {
				t.Errorf("%s: after %s: %v", k, took, err)
			}
			t.Logf("%s: %s: %v", k, took.Round(time.Millisecond), err)
		}()
	}
	// The healthy server answers while the others misbehave.
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "good-echo", Arguments: map[string]any{"text": "x"}})
	if err != nil || res.Content[0].(*sdk.TextContent).Text != "echo:x" || time.Since(start) > 500*time.Millisecond {
		t.Fatalf("good server during the others' trouble: %+v %v after %s", res, err, time.Since(start))
	}
	for range kinds {
		<-done
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range statuses {
		if s >= 500 {
			t.Fatalf("the gateway answered HTTP %d", s)
		}
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
