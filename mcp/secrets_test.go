package mcp

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// fakePAT is a GitHub token nobody issued.
func fakePAT(t *testing.T) string {
	for _, c := range secrettest.Corpus(10) {
		if c.Kind == "github-pat" {
			return c.Value
		}
	}
	t.Fatal("the corpus has no github-pat")
	return ""
}

type secretEvents struct {
	mu     sync.Mutex
	events []secretscan.Event
}

func (s *secretEvents) add(e secretscan.Event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
}

func (s *secretEvents) all() []secretscan.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]secretscan.Event(nil), s.events...)
}

func argScreen(t *testing.T, action secretscan.Action, ev *secretEvents) *ArgScreen {
	fw, err := secretscan.New(100, 100)
	if err != nil {
		t.Fatal(err)
	}
	return &ArgScreen{Firewall: fw, Action: func(*modellist.MCPServer) secretscan.Action { return action }, Report: ev.add}
}

// TestToolCallArgumentsScreened (H10-1): a tools/call whose arguments
// hold a credential reaches the MCP server with a placeholder under
// redact, and is refused with a JSON-RPC error naming the rule (not the
// value) under block, the server not called; both are reported.
func TestToolCallArgumentsScreened(t *testing.T) {
	pat := fakePAT(t)
	for _, action := range []secretscan.Action{secretscan.Redact, secretscan.Block, secretscan.Log} {
		t.Run(string(action), func(t *testing.T) {
			up := upstreamServer(t, "tok")
			ev := &secretEvents{}
			obs := &recObs{}
			g := New(Options{Observer: obs, Secrets: argScreen(t, action, ev), Servers: []*modellist.MCPServer{{Name: "internal",
				Transport: modellist.MCPTransportHTTP, URL: up.URL, Headers: map[string]string{"Authorization": "Bearer tok"}}}})
			g.Start()
			t.Cleanup(g.Close)
			gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"alice": {KeyID: "k-alice", Person: "alice@example.com"}}))
			t.Cleanup(gw.Close)
			for _, path := range []string{"/mcp", "/mcp/internal"} {
				cs := connect(t, gw.URL+path, "alice")
				name := "internal-echo"
				if path != "/mcp" {
					name = "echo"
				}
				waitTools(t, cs, 2)
				res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: map[string]any{"text": "deploy creds: " + pat}})
				switch action {
				case secretscan.Block:
					if err == nil || !strings.Contains(err.Error(), "github-pat") || strings.Contains(err.Error(), pat) {
						t.Fatalf("%s: blocked call answered %+v %v", path, res, err)
					}
				default:
					if err != nil || res.IsError {
						t.Fatalf("%s: %+v %v", path, res, err)
					}
					got := res.Content[0].(*sdk.TextContent).Text
					if action == secretscan.Redact && (strings.Contains(got, pat) || !strings.Contains(got, "[REDACTED:github-pat")) {
						t.Fatalf("%s: the server saw %q", path, got)
					}
					if action == secretscan.Log && !strings.Contains(got, pat) {
						t.Fatalf("%s: log changed the arguments: %q", path, got)
					}
				}
			}
			evs := ev.all()
			if len(evs) != 2 || evs[0].Rule != "github-pat" || evs[0].Action != action || evs[0].KeyID != "k-alice" || evs[0].Alias != "mcp:internal/echo" {
				t.Fatalf("reported %+v", evs)
			}
			if action == secretscan.Block {
				obs.mu.Lock()
				defer obs.mu.Unlock()
				if len(obs.calls) != 2 || obs.calls[0].Outcome != OutcomeDenied {
					t.Fatalf("blocked calls recorded as %+v", obs.calls)
				}
			}
		})
	}
}

// TestApprovalArgumentsScreened (H10-3): an approval's chat line and
// stored row hold the firewall's placeholder, never the credential in the
// arguments; with the redact action the approved call sends the redacted
// arguments the approver read, and with log (the server gets what the
// caller sent) the people deciding still read the redacted form.
func TestApprovalArgumentsScreened(t *testing.T) {
	pat := fakePAT(t)
	for _, action := range []secretscan.Action{secretscan.Redact, secretscan.Log} {
		t.Run(string(action), func(t *testing.T) {
			store := sqliteApprovals(t)
			r := newApprovalRig(t, store, time.Minute)
			r.g.opts.Secrets = argScreen(t, action, &secretEvents{})
			cs := connect(t, r.gw.URL+"/mcp", "alice")
			waitTools(t, cs, 2)
			call := callAsync(cs, "token "+pat)
			msg := r.chat.next(t)
			if strings.Contains(msg, pat) || !strings.Contains(msg, "[REDACTED:github-pat") {
				t.Fatalf("chat line %q", msg)
			}
			rows, err := store.MCPApprovals(context.Background(), ledger.ApprovalPending, 10)
			if err != nil || len(rows) != 1 || strings.Contains(rows[0].Args, pat) || !strings.Contains(rows[0].Args, "[REDACTED:github-pat") {
				t.Fatalf("stored %+v %v", rows, err)
			}
			approve, _ := links(t, msg)
			if code, page := click(t, approve); code != 200 || strings.Contains(page, pat) {
				t.Fatalf("approve: %d %s", code, page)
			}
			got := <-call
			if got.err != nil {
				t.Fatal(got.err)
			}
			text := got.res.Content[0].(*sdk.TextContent).Text
			if redacted := !strings.Contains(text, pat); redacted != (action == secretscan.Redact) {
				t.Fatalf("%s: the server saw %q", action, text)
			}
		})
	}
}
