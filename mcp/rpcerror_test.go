package mcp

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// rawSession speaks JSON-RPC to the gateway by hand, as a client other than
// the Go SDK would, so the test sees the codes on the wire.
type rawSession struct {
	t       *testing.T
	url     string
	key     string
	session string
	next    int
}

type rawAnswer struct {
	ID     int             `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func openRaw(t *testing.T, url, key string) *rawSession {
	s := &rawSession{t: t, url: url, key: key}
	s.send("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}})
	s.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

func (s *rawSession) post(body string) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	if s.session != "" {
		req.Header.Set("Mcp-Session-Id", s.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.session = id
	}
	return resp
}

// send posts one request and returns its answer, read from a JSON body or
// the first SSE message event.
func (s *rawSession) send(method string, params any) rawAnswer {
	s.t.Helper()
	s.next++
	p, _ := json.Marshal(params)
	resp := s.post(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, s.next, method, p))
	defer resp.Body.Close()
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: ")); ok {
				data = append([]byte(nil), d...)
				break
			}
		}
	} else {
		_ = json.NewDecoder(resp.Body).Decode(&json.RawMessage{})
	}
	var a rawAnswer
	if err := json.Unmarshal(data, &a); err != nil || a.ID != s.next {
		s.t.Fatalf("%s: answer %q (HTTP %d): %v", method, data, resp.StatusCode, err)
	}
	return a
}

// TestRefusedCallCodes: a tools/call the gateway refuses is a JSON-RPC
// error with a real code on the wire (-32602 for a tool outside the key's
// allow-list or unknown, -32603 for a server that is down), never code 0.
func TestRefusedCallCodes(t *testing.T) {
	up := upstreamServer(t, "tok")
	g := New(Options{Servers: []*modellist.MCPServer{
		{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL, Headers: map[string]string{"Authorization": "Bearer tok"}},
		{Name: "dead", Transport: modellist.MCPTransportHTTP, URL: "http://127.0.0.1:1/mcp"},
	}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"bob": {KeyID: "k-bob", MCP: []string{"internal/echo", "dead"}}}))
	t.Cleanup(gw.Close)
	waitTools(t, connect(t, gw.URL+"/mcp", "bob"), 1)
	s := openRaw(t, gw.URL+"/mcp", "bob")
	for _, c := range []struct {
		tool string
		code int64
		says string
	}{
		{"internal-secret", -32602, "not allowed for this key"},
		{"internal-nosuch", -32602, "has no tool"},
		{"nosuch-tool", -32602, "no MCP server offers it"},
		{"dead-anything", -32603, "try again later"},
	} {
		a := s.send("tools/call", map[string]any{"name": c.tool, "arguments": map[string]any{}})
		if a.Error == nil || a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.says) {
			t.Errorf("%s: %+v %s", c.tool, a.Error, a.Result)
		}
	}
	if a := s.send("prompts/get", map[string]any{"name": "internal-p"}); a.Error == nil || a.Error.Code != -32602 {
		t.Errorf("prompts/get of a server the key has only a tool of: %+v", a.Error)
	}
	if a := s.send("tools/call", map[string]any{"name": "internal-echo", "arguments": map[string]any{"text": "hi"}}); a.Error != nil {
		t.Errorf("allowed call: %+v", a.Error)
	}
}

// TestMadeUpToolNamesShareOneRow: 100 calls for random tool names, under
// a configured server's prefix or none, are recorded under one server and
// tool each, so they add one roll-up row (and report line) per form, not
// one per name; the names themselves go only to Requested.
func TestMadeUpToolNamesShareOneRow(t *testing.T) {
	up := upstreamServer(t, "tok")
	obs := &recObs{}
	g := New(Options{Observer: obs, Servers: []*modellist.MCPServer{
		{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL, Headers: map[string]string{"Authorization": "Bearer tok"}},
	}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"all": {KeyID: "k-all"}}))
	t.Cleanup(gw.Close)
	waitTools(t, connect(t, gw.URL+"/mcp", "all"), 2)
	s := openRaw(t, gw.URL+"/mcp", "all")
	for i := range 100 {
		name := fmt.Sprintf("internal-%x", rand.Uint64())
		if i%2 == 1 {
			name = fmt.Sprintf("x%x-%s", rand.Uint64(), strings.Repeat("y", 300))
		}
		if a := s.send("tools/call", map[string]any{"name": name}); a.Error == nil || len(a.Error.Message) > 400 {
			t.Fatalf("%s: %+v", name, a.Error)
		}
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	rows := map[string]int{}
	for _, c := range obs.calls {
		rows[c.Server+"/"+c.Tool]++
		if c.Requested == "" || len(c.Requested) > 128+len("…") || c.Outcome != "denied" {
			t.Errorf("call %+v", c)
		}
	}
	if len(obs.calls) != 100 || len(rows) != 2 || rows["internal/(unknown)"] != 50 || rows["(unknown)/(unknown)"] != 50 {
		t.Fatalf("%d calls in rows %v", len(obs.calls), rows)
	}
}

// TestEveryRefusalNamesTheTool: each way the gateway refuses a tools/call
// is a JSON-RPC error with a non-zero code whose message names the tool
// and says why: the allow-list, an unknown tool, a server down, a rate
// limit, an approval that cannot be kept or arguments an approval cannot
// be bound to.
func TestEveryRefusalNamesTheTool(t *testing.T) {
	up := upstreamServer(t, "tok")
	g := New(Options{Servers: []*modellist.MCPServer{
		{Name: "internal", Transport: modellist.MCPTransportHTTP, URL: up.URL, Headers: map[string]string{"Authorization": "Bearer tok"}, RequireApproval: []string{"secret"}},
		{Name: "dead", Transport: modellist.MCPTransportHTTP, URL: "http://127.0.0.1:1/mcp"},
	},
		Admit: func(_ context.Context, id *policy.Identity) error {
			if id.KeyID == "k-slow" {
				return errors.New("key k-slow is over its rpm (3 per minute); retry after 20 s")
			}
			return nil
		},
		Approvals: &Approvals{Store: func() ledger.MCPApprovalStore { return nil }}})
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"bob": {KeyID: "k-bob", MCP: []string{"internal", "dead"}}, "slow": {KeyID: "k-slow"}}))
	t.Cleanup(gw.Close)
	waitTools(t, connect(t, gw.URL+"/mcp", "bob"), 2)
	bob, slow := openRaw(t, gw.URL+"/mcp", "bob"), openRaw(t, gw.URL+"/mcp", "slow")
	for _, c := range []struct {
		s    *rawSession
		tool string
		args string
		code int64
		says string
	}{
		{bob, "internal-secret", `{"text":"x","text":"y"}`, -32602, `tool "secret" of MCP server "internal" needs approval, and its arguments give the key "text" twice`},
		{bob, "internal-secret", `{}`, -32603, `tool "secret" of MCP server "internal": needs a person's approval, and the gateway has no ledger database`},
		{bob, "dead-anything", `{}`, -32603, `tool "dead-anything": MCP server "dead"`},
		{slow, "internal-echo", `{}`, -32000, `tool "echo" of MCP server "internal": key k-slow is over its rpm`},
	} {
		a := c.s.send("tools/call", map[string]any{"name": c.tool, "arguments": json.RawMessage(c.args)})
		if a.Error == nil || a.Error.Code != c.code || !strings.Contains(a.Error.Message, c.says) {
			t.Errorf("%s %s: %+v, want %d %q", c.tool, c.args, a.Error, c.code, c.says)
		}
	}
}
