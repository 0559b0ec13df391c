package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/mcp/upstreamauth"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// An auth: oauth server (docs/mcp-upstream-auth.md) has no shared
// session: each caller (a person, or a key of no one: upstreamauth.Unit)
// reaches it on a session of their own, whose every request carries their
// own token (Options.Credentials). The sessions are opened on a caller's
// first call, kept in a bounded pool, and closed after personalIdle
// without a call, when the pool is full (least recently used first), when
// the caller disconnects or connects again, and when the gateway stops.
//
// tools/list is the same for everyone: the tools the server listed to the
// last session opened (servers list the same tools to every account, as a
// rule). Until a session has listed them in this process (after a start
// or a reload), a connected caller's tools/list opens their session first
// (listPersonal), and a caller not connected sees one tool, connect, whose
// call answers their connect link or, once connected, lists the tools. A
// caller who has not connected gets the connect link as the error of any
// call (codeConnect).

// codeConnect is the JSON-RPC error of a call by someone who has not
// connected the server: its message carries their connect link, and its
// data {"connect_url": …}.
const codeConnect = -32032

// connectToolName is the tool an auth: oauth server shows before its
// tools are known.
const connectToolName = "connect"

const (
	maxPersonalSessions = 1000
	personalIdle        = 10 * time.Minute
)

type personalKey struct{ server, unit string }

type personalSession struct {
	ready  chan struct{}
	cs     *sdk.ClientSession
	err    error
	cancel context.CancelFunc
	last   time.Time // under the pool's lock
}

// personalPool is the gateway's per-caller sessions.
type personalPool struct {
	mu  sync.Mutex
	ctx context.Context // the gateway's run, set by the first runPersonal
	m   map[personalKey]*personalSession
}

// personal reports an auth: oauth server.
func (u *upstream) personal() bool {
	return u.cfg.Auth == modellist.MCPAuthOAuth && u.g.opts.Credentials != nil
}

// personalTools is what tools/list shows of a personal server (u.mu held).
func (u *upstream) personalTools() []*sdk.Tool {
	if u.listed {
		return u.tools
	}
	return []*sdk.Tool{{Name: connectToolName, Description: fmt.Sprintf("Connect your own account to the MCP server %s, which acts as you: call this for your sign-in link (once); then its tools are listed.", u.cfg.Name),
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{}}}}
}

// runPersonal is a personal server's loop: no session of its own, only
// the idle sessions' eviction.
func (g *Gateway) runPersonal(ctx context.Context, u *upstream) {
	g.pool.mu.Lock()
	if g.pool.ctx == nil {
		g.pool.ctx = ctx
	}
	g.pool.mu.Unlock()
	u.mu.Lock()
	u.down = nil
	u.mu.Unlock()
	u.attempted()
	u.g.changed()
	tick := time.NewTicker(time.Minute)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			g.pool.evictIdle(u.cfg.Name, now)
		}
	}
}

// evictIdle closes server's sessions unused for personalIdle at now.
func (p *personalPool) evictIdle(server string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k, ps := range p.m {
		if k.server == server && now.Sub(ps.last) > personalIdle {
			p.drop(k, ps)
		}
	}
}

// drop ends ps and forgets it (p.mu held).
func (p *personalPool) drop(k personalKey, ps *personalSession) {
	if p.m[k] == ps {
		delete(p.m, k)
	}
	if ps.cancel != nil {
		ps.cancel()
	}
}

// forget ends unit's session to server (a disconnect, a new grant).
func (g *Gateway) forget(server, unit string) {
	g.pool.mu.Lock()
	defer g.pool.mu.Unlock()
	k := personalKey{server, unit}
	if ps := g.pool.m[k]; ps != nil {
		g.pool.drop(k, ps)
	}
}

// personalSession is id's session to u, opened on first use.
func (g *Gateway) personalSession(ctx context.Context, u *upstream, id *policy.Identity) (*sdk.ClientSession, error) {
	unit := upstreamauth.Unit(id)
	// The token first: someone not connected gets their link at once, and
	// an expiring token is renewed before the session's first request.
	if _, err := g.opts.Credentials.Token(ctx, u.cfg.Name, unit, ""); err != nil {
		return nil, err
	}
	k := personalKey{u.cfg.Name, unit}
	g.pool.mu.Lock()
	if g.pool.ctx == nil {
		g.pool.mu.Unlock()
		return nil, errors.New("is starting")
	}
	ps := g.pool.m[k]
	if ps == nil {
		if g.pool.m == nil {
			g.pool.m = map[personalKey]*personalSession{}
		}
		if len(g.pool.m) >= maxPersonalSessions {
			g.pool.evictOldest()
		}
		sctx, cancel := context.WithCancel(g.pool.ctx)
		ps = &personalSession{ready: make(chan struct{}), cancel: cancel}
		g.pool.m[k] = ps
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			g.keepPersonal(sctx, u, k, ps)
		}()
	}
	ps.last = time.Now()
	g.pool.mu.Unlock()
	select {
	case <-ps.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ps.err != nil {
		return nil, ps.err
	}
	return ps.cs, nil
}

// evictOldest closes the least recently used session (p.mu held).
func (p *personalPool) evictOldest() {
	var oldest personalKey
	var ops *personalSession
	for k, ps := range p.m {
		if ops == nil || ps.last.Before(ops.last) {
			oldest, ops = k, ps
		}
	}
	if ops != nil {
		p.drop(oldest, ops)
	}
}

// keepPersonal opens k's session, lists the server's tools on it, and
// holds it until it ends or is dropped.
func (g *Gateway) keepPersonal(ctx context.Context, u *upstream, k personalKey, ps *personalSession) {
	defer func() {
		g.pool.mu.Lock()
		g.pool.drop(k, ps)
		g.pool.mu.Unlock()
	}()
	client := sdk.NewClient(&sdk.Implementation{Name: "modelgate", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: g.onProgress,
		ToolListChangedHandler: func(ctx context.Context, r *sdk.ToolListChangedRequest) {
			if r.Session != nil {
				_ = u.list(ctx, r.Session)
			}
		},
	})
	base := &bearerTransport{credentials: g.opts.Credentials, server: k.server, unit: k.unit, headers: u.cfg.Headers, base: http.DefaultTransport}
	// Connecting and listing are bounded by connectTimeout; the session's
	// context must outlive them (the SSE transport's stream lives on it).
	timer := time.AfterFunc(g.connectTimeout, ps.cancel)
	cs, err := client.Connect(ctx, u.transportOver(ctx, base), nil)
	if err == nil {
		if err = u.list(ctx, cs); err != nil {
			cs.Close()
		}
	}
	if !timer.Stop() && err == nil {
		cs.Close()
		err = fmt.Errorf("not done within %s", g.connectTimeout)
	}
	if err != nil {
		ps.err = fmt.Errorf("connect: %w", err)
		close(ps.ready)
		return
	}
	ps.cs = cs
	close(ps.ready)
	go func() {
		<-ctx.Done()
		cs.Close()
	}()
	_ = cs.Wait()
}

// bearerTransport adds the caller's own token to each request to the
// server (and the entry's other headers); a 401 renews the token once and
// sends the request again.
type bearerTransport struct {
	credentials  *upstreamauth.Broker
	server, unit string
	headers      map[string]string
	base         http.RoundTripper
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.credentials.Token(r.Context(), t.server, t.unit, "")
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(t.with(r, tok))
	if err != nil || resp.StatusCode != http.StatusUnauthorized || (r.Body != nil && r.GetBody == nil) {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if tok, err = t.credentials.Token(r.Context(), t.server, t.unit, tok); err != nil {
		return nil, err
	}
	again := t.with(r, tok)
	if r.GetBody != nil {
		if again.Body, err = r.GetBody(); err != nil {
			return nil, err
		}
	}
	return t.base.RoundTrip(again)
}

func (t *bearerTransport) with(r *http.Request, tok string) *http.Request {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	r.Header.Set("Authorization", "Bearer "+tok)
	return r
}

// personalError is the JSON-RPC error of a request (what: `tool "x"`)
// to a personal server that could not get the caller's session.
func personalError(what, server string, err error) error {
	var nc *upstreamauth.NotConnectedError
	if errors.As(err, &nc) {
		e := &jsonrpc.Error{Code: codeConnect, Message: what + ": " + nc.Error()}
		if nc.URL != "" {
			e.Data = []byte(fmt.Sprintf(`{"connect_url":%q}`, nc.URL))
		}
		return e
	}
	return rpcError(jsonrpc.CodeInternalError, "%s: MCP server %q: %v; try again later", what, server, err)
}

// listPersonal opens the caller's own session to each personal server of
// v that has not listed its tools in this process (after a start or a
// reload), when the caller is connected to it: the list they get is then
// the server's, not only its connect tool. Someone not connected costs a
// ledger read per such server.
func (g *Gateway) listPersonal(ctx context.Context, v *view, id *policy.Identity) {
	if id == nil || g.opts.Credentials == nil {
		return
	}
	for _, u := range g.ups {
		if !u.personal() || (v.single != "" && v.single != u.cfg.Name) || !serverAllowed(g.allowList(id), u.cfg.Name) {
			continue
		}
		u.mu.Lock()
		listed := u.listed
		u.mu.Unlock()
		if !listed {
			_, _ = g.personalSession(ctx, u, id)
		}
	}
}

// connectAnswer is the result of the connect tool for a caller who is
// connected (its session listed the server's tools); nil for any other
// tool, or when the server has a connect tool of its own.
func connectAnswer(u *upstream, tool string) *sdk.CallToolResult {
	if tool != connectToolName || u.knows(connectToolName) {
		return nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("Your account is connected to %s; its tools are listed now.", u.cfg.Name)}}}
}
