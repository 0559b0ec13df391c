package mcp

import (
	"context"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// firstAttemptWait bounds how long after Start (a start or a config
// reload) a request waits for servers still making their first connection
// attempt, so that tools/list right after a reload does not silently omit
// them. A server whose first attempt takes longer (the connect timeout is
// 30 s) is left out until it connects, and the clients are then told the
// list changed.
const firstAttemptWait = 10 * time.Second

// attempted marks u's first connection attempt finished, connected or not,
// and the gateway settled once every server's has.
func (u *upstream) attempted() {
	u.firstOnce.Do(func() {
		close(u.first)
		for _, o := range u.g.ups {
			select {
			case <-o.first:
			default:
				return
			}
		}
		u.g.settled.Store(true)
	})
}

// awaitFirst waits until each of ups has finished its first connection
// attempt, the start window (firstWait from Start) has passed, or ctx
// ends. Once every first attempt is over it costs a channel check each.
func (g *Gateway) awaitFirst(ctx context.Context, ups []*upstream) {
	var timeout <-chan time.Time
	for _, u := range ups {
		select {
		case <-u.first:
			continue
		default:
		}
		if timeout == nil {
			g.mu.Lock()
			started := g.started
			g.mu.Unlock()
			left := time.Until(started.Add(g.firstWait))
			if started.IsZero() || left <= 0 {
				if !started.IsZero() {
					g.settled.Store(true)
				}
				return
			}
			t := time.NewTimer(left)
			defer t.Stop()
			timeout = t.C
			if g.onWait != nil {
				g.onWait()
			}
		}
		select {
		case <-u.first:
		case <-timeout:
			return
		case <-ctx.Done():
			return
		}
	}
}

// waitsFor are the servers a request to view v waits for: those whose
// first attempt decides what it sees. A tools/call waits for the server it
// names; the lists, and the features that read a server, for every server
// of the view.
func (g *Gateway) waitsFor(v *view, method string, req sdk.Request) []*upstream {
	switch {
	case method == "tools/call":
		r, ok := req.(*sdk.CallToolRequest)
		if !ok || r.Params == nil {
			return nil
		}
		server := v.single
		if server == "" {
			server = serverPrefix(r.Params.Name)
		}
		if u := g.byName[server]; u != nil {
			return []*upstream{u}
		}
		return nil
	case method == "tools/list" || featureMethods[method]:
		if v.single != "" {
			return []*upstream{g.byName[v.single]}
		}
		return g.ups
	}
	return nil
}

// NotConnected names the servers with no live session, in configuration
// order, for the readiness probe. Names only: a server's error may carry
// its URL.
func (g *Gateway) NotConnected() []string {
	out := []string{}
	for _, u := range g.ups {
		if _, _, err := u.current(); err != nil {
			out = append(out, u.cfg.Name)
		}
	}
	return out
}

// serverPrefix is the server an aggregate name starts with ("<server>-").
func serverPrefix(name string) string {
	server, _, _ := strings.Cut(name, "-")
	return server
}
