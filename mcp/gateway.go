package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/mcp/upstreamauth"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// Observer receives what the gateway wants recorded: every tool call (for
// the ledger, metrics and rate limits), upstream session changes and stdio
// servers' stderr lines. It must not block.
type Observer interface {
	ToolCall(ctx context.Context, c Call)
	Upstream(server string, err error)
	Stderr(server, line string)
	// Ignored is a message from the server the gateway dropped (a
	// response on the standalone GET stream), for the debug log; a few
	// per connection at most.
	Ignored(server, why string)
}

// Call is one tools/call as the ledger records it.
type Call struct {
	Server string
	Tool   string
	// Requested is the name the client sent when Server or Tool is
	// "(unknown)" (no server has it), cut to 128 bytes: for the debug log
	// only, never the ledger.
	Requested string
	KeyID     string
	Workspace string
	Session   string
	Duration  time.Duration
	Outcome   Outcome
	// Bytes is the size of the arguments plus the result as JSON.
	Bytes int64
	// Approval is the id of the approval the call needed (apr_…), ""
	// when it needed none.
	Approval string
	// Person and Groups are whose spend the call is (policy.Identity's
	// PersonID and Groups), as a model call's record carries them.
	Person, Groups string
	// Spend is what the call cost (its server's cost_per_call) and the
	// reservation it was settled on, for its ledger record (spend.go).
	Spend Spend
}

// Options configure a Gateway.
type Options struct {
	Servers []*modellist.MCPServer
	// MaxRequestBody bounds one client message in bytes. Default 4 MiB.
	MaxRequestBody int64
	// Timeout bounds one upstream call when the server sets none. Default 60 s.
	Timeout time.Duration
	// Observer is told of calls and upstream events; nil ignores them.
	Observer Observer
	// WorkspaceMCP returns a workspace's MCP allow-list (nil: every
	// server); a key in the workspace gets what both lists allow. Nil
	// applies no workspace lists.
	WorkspaceMCP func(workspace string) []string
	// Admit is asked before each tool call (the key's rpm limit); an error
	// refuses the call with that message. Nil admits every call.
	Admit func(ctx context.Context, id *policy.Identity) error
	// Reserve admits a priced call's cost against every budget and spend
	// limit of the caller (key, workspace, person, groups, organization,
	// session), as a model call's worst case is; a refusal's error is the
	// call's answer. Nil: priced calls are recorded but not admitted.
	Reserve func(ctx context.Context, id *policy.Identity, session string, pico int64) (*policy.Reservation, error)
	// Approvals configure the calls that wait for a person's approval
	// (require_approval, mcp_approval); nil refuses such calls.
	Approvals *Approvals
	// ToolSearch reports whether a caller gets the small tool list
	// (toolsearch.go); nil gives everyone every tool.
	ToolSearch func(id *policy.Identity) bool
	// Credentials hold each person's own tokens to the auth: oauth
	// servers (personal.go); nil leaves those servers unreachable.
	Credentials *upstreamauth.Broker
	// Secrets screens each tool call's arguments with the secret firewall
	// (secrets.go); nil sends them as they are.
	Secrets *ArgScreen
}

// Gateway serves the MCP endpoints. Close stops its upstream sessions and
// stdio processes.
type Gateway struct {
	opts           Options
	obs            Observer
	connectTimeout time.Duration
	ups            []*upstream
	byName         map[string]*upstream
	agg            http.Handler
	single         map[string]http.Handler
	cancel         context.CancelFunc
	// started is when Start ran; requests wait up to firstWait from it for
	// servers' first connection attempts (awaitFirst).
	started   time.Time
	firstWait time.Duration
	// onWait, when set (tests), is called when a request starts waiting.
	onWait func()
	// settled is set once no request needs to wait any more: every first
	// attempt is over, or the window has passed.
	settled atomic.Bool
	wg      sync.WaitGroup

	mu sync.Mutex
	// servers are the SDK servers built so far, one per view (which
	// upstreams, which allow-list); changed() re-syncs their tools, and the
	// SDK tells their sessions the list changed.
	servers map[string]*view

	// progress maps the tokens the gateway gave upstream requests to the
	// clients waiting for their progress (relayProgress).
	pmu      sync.Mutex
	pseq     uint64
	progress map[string]progressTarget

	// pool is the callers' own sessions to auth: oauth servers.
	pool personalPool
}

type view struct {
	s      *sdk.Server
	single string   // the server of /mcp/<server>, "" for the aggregate
	allow  []string // nil: everything
	// have maps each tool name served to the upstream tool it was made
	// from, so a sync re-adds only what changed (each add tells the
	// sessions the list changed).
	have map[string]*sdk.Tool
	// search: tools/list shows only the gateway's search and call tools.
	search bool
}

type nopObserver struct{}

func (nopObserver) ToolCall(context.Context, Call) {}
func (nopObserver) Upstream(string, error)         {}
func (nopObserver) Stderr(string, string)          {}
func (nopObserver) Ignored(string, string)         {}

// New builds the gateway; Start connects it. Building starts nothing, so
// `caddy validate` starts no stdio process.
func New(o Options) *Gateway {
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = 4 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 60 * time.Second
	}
	g := &Gateway{opts: o, obs: o.Observer, connectTimeout: 30 * time.Second, firstWait: firstAttemptWait, byName: map[string]*upstream{}, single: map[string]http.Handler{}, servers: map[string]*view{}, progress: map[string]progressTarget{}}
	if g.obs == nil {
		g.obs = nopObserver{}
	}
	if o.Credentials != nil {
		o.Credentials.OnDisconnect(g.forget)
	}
	hopts := &sdk.StreamableHTTPOptions{MaxRequestBodyBytes: o.MaxRequestBody, DisableLocalhostProtection: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	g.agg = g.withToken(sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server { return g.server(r, "") }, hopts))
	for _, s := range o.Servers {
		u := &upstream{cfg: s, g: g, down: errors.New("connecting"), refresh: make(chan struct{}, 1), first: make(chan struct{})}
		g.ups = append(g.ups, u)
		g.byName[s.Name] = u
		g.single[s.Name] = g.withToken(sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server { return g.server(r, s.Name) }, hopts))
	}
	return g
}

// Start opens a session to every server in the background and returns at
// once: a server that is down does not hold up the gateway, and its calls
// fail at once until it is back. For firstAttemptWait after Start, a
// request waits for the servers it needs to finish their first attempt.
func (g *Gateway) Start() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	g.started = time.Now()
	for _, u := range g.ups {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			u.run(ctx)
		}()
	}
}

// Close ends every upstream session and stops the stdio processes.
func (g *Gateway) Close() {
	g.mu.Lock()
	cancel := g.cancel
	g.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	g.wg.Wait()
}

// Handles reports whether path is one of the gateway's: /mcp or /mcp/<server>.
func Handles(path string) bool {
	return path == "/mcp" || strings.HasPrefix(path, "/mcp/")
}

// ServeHTTP serves /mcp and /mcp/<server> to an authenticated caller
// (policy.IdentityFrom); the caller's handler answers 401 before this.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/mcp" || r.URL.Path == "/mcp/" {
		g.agg.ServeHTTP(w, r)
		return
	}
	name := strings.TrimPrefix(r.URL.Path, "/mcp/")
	h, ok := g.single[name]
	if !ok {
		writeError(w, http.StatusNotFound, fmt.Sprintf("no MCP server %q is configured (servers: %s)", name, strings.Join(g.names(), ", ")))
		return
	}
	id := policy.IdentityFrom(r.Context())
	if !serverAllowed(g.allowList(id), name) {
		writeError(w, http.StatusForbidden, fmt.Sprintf("this key may not use MCP server %q", name))
		return
	}
	h.ServeHTTP(w, r)
}

func (g *Gateway) names() []string {
	var out []string
	for _, u := range g.ups {
		out = append(out, u.cfg.Name)
	}
	return out
}

// writeError answers a request the SDK never sees in JSON-RPC's shape.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": msg}})
}

// withToken hands the caller to the SDK as its TokenInfo, so a session is
// bound to the key that opened it (another key's request for it gets 403)
// and each tool call sees the key of its own HTTP request.
func (g *Gateway) withToken(h http.Handler) http.Handler {
	mw := auth.RequireBearerToken(func(ctx context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id := policy.IdentityFrom(r.Context())
		if id == nil {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: id.KeyID, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"identity": id}}, nil
	}, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(strings.ToLower(r.Header.Get("Authorization")), "bearer ") {
			// The key came as x-api-key and llm_auth already checked it;
			// the SDK's middleware only looks for a bearer token.
			r = r.Clone(r.Context())
			r.Header.Set("Authorization", "Bearer x-api-key")
		}
		mw.ServeHTTP(w, r)
	})
}

// allowList is what id may use: its key's list narrowed by its
// workspace's (Options.WorkspaceMCP). Both are read on every request, so
// an admin API change applies to the next call on every instance.
func (g *Gateway) allowList(id *policy.Identity) []string {
	if id == nil {
		return []string{}
	}
	if g.opts.WorkspaceMCP == nil || id.Workspace == "" {
		return id.MCP
	}
	return intersect(id.MCP, g.opts.WorkspaceMCP(id.Workspace))
}

// intersect is the allow-list granting what both a and b grant (nil
// grants everything).
func intersect(a, b []string) []string {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := []string{}
	for _, e := range a {
		server, tool, isTool := strings.Cut(e, "/")
		switch {
		case isTool && toolAllowed(b, server, tool):
			out = append(out, e)
		case !isTool && slices.Contains(b, server):
			out = append(out, e)
		case !isTool:
			// a grants the whole server; b some of its tools.
			for _, f := range b {
				if strings.HasPrefix(f, server+"/") {
					out = append(out, f)
				}
			}
		}
	}
	return out
}

// serverAllowed: an allow-list entry is "server" or "server/tool".
func serverAllowed(allow []string, server string) bool {
	if allow == nil {
		return true
	}
	for _, a := range allow {
		if a == server || strings.HasPrefix(a, server+"/") {
			return true
		}
	}
	return false
}

func toolAllowed(allow []string, server, tool string) bool {
	return allow == nil || slices.Contains(allow, server) || slices.Contains(allow, server+"/"+tool)
}

// server returns the SDK server for a new session: the view of the
// caller's allow-list on one server or on all of them.
func (g *Gateway) server(r *http.Request, single string) *sdk.Server {
	id := policy.IdentityFrom(r.Context())
	allow := g.allowList(id)
	key := single + "\x00" + strings.Join(allow, "\x00")
	if allow == nil {
		key += "\x00*"
	}
	search := g.opts.ToolSearch != nil && id != nil && g.opts.ToolSearch(id)
	if search {
		key += "\x00search"
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.servers[key]
	if !ok {
		v = &view{single: single, allow: allow, search: search, have: map[string]*sdk.Tool{}, s: sdk.NewServer(&sdk.Implementation{Name: "modelgate", Version: "1"}, &sdk.ServerOptions{
			Capabilities: &sdk.ServerCapabilities{
				Tools:       &sdk.ToolCapabilities{ListChanged: true},
				Resources:   &sdk.ResourceCapabilities{ListChanged: true},
				Prompts:     &sdk.PromptCapabilities{ListChanged: true},
				Completions: &sdk.CompletionCapabilities{},
			},
		})}
		v.s.AddReceivingMiddleware(g.forward(v))
		if search {
			g.addSearchTools(v)
		}
		g.servers[key] = v
		g.sync(v)
	}
	return v.s
}

// changed re-syncs every view's tools after an upstream connected,
// dropped, or listed new tools.
func (g *Gateway) changed() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, v := range g.servers {
		g.sync(v)
	}
}

// listChanged tells the sessions that see server that its resources (or
// prompts) changed. The views answer those lists from the server itself,
// so nothing is re-listed here; the SDK sends its list_changed
// notification when a view's own registry changes, which a placeholder
// added and removed at once does (it debounces the two into one
// notification, and no list ever shows the placeholder: the forwarding
// middleware answers resources/list and prompts/list).
func (g *Gateway) listChanged(server string, prompts bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, v := range g.servers {
		if (v.single != "" && v.single != server) || !serverAllowed(v.allow, server) {
			continue
		}
		if prompts {
			v.s.AddPrompt(&sdk.Prompt{Name: listChangedPlaceholder}, nil)
			v.s.RemovePrompts(listChangedPlaceholder)
			continue
		}
		v.s.AddResource(&sdk.Resource{URI: "modelgate:" + listChangedPlaceholder, Name: listChangedPlaceholder}, nil)
		v.s.RemoveResources("modelgate:" + listChangedPlaceholder)
	}
}

// listChangedPlaceholder names the entry listChanged adds and removes.
const listChangedPlaceholder = "modelgate-list-changed"

// sync makes v's tools those of its upstreams that its allow-list lets
// through, named <server>-<tool> in the aggregate.
func (g *Gateway) sync(v *view) {
	want := map[string]bool{}
	for _, u := range g.ups {
		if v.single != "" && u.cfg.Name != v.single {
			continue
		}
		_, tools, err := u.current()
		if err != nil || !serverAllowed(v.allow, u.cfg.Name) {
			continue
		}
		for _, t := range tools {
			if !toolAllowed(v.allow, u.cfg.Name, t.Name) {
				continue
			}
			nt := *t
			if v.single == "" {
				nt.Name = u.cfg.Name + "-" + t.Name
			}
			if v.search && (nt.Name == searchToolName || nt.Name == callToolName) {
				continue // the gateway's own tools keep their names
			}
			want[nt.Name] = true
			if v.have[nt.Name] != t {
				v.have[nt.Name] = t
				v.s.AddTool(&nt, g.callHandler(u, t.Name))
			}
		}
	}
	var gone []string
	for name := range v.have {
		if !want[name] {
			gone = append(gone, name)
			delete(v.have, name)
		}
	}
	if len(gone) > 0 {
		v.s.RemoveTools(gone...)
	}
}
