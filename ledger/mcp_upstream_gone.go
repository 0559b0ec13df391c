package ledger

import "sync"

// A grant deleted with its holder (a key revoked, a person deprovisioned
// by SCIM) must also end at the authorization server that issued it
// (RFC 7009), which only the holder of mcp_token_key can do: the ledger
// tells the watchers of this process (package mcp/upstreamauth) which
// rows it deleted, once the deletion is committed. The instance that
// deleted them is the one told, so each is revoked once.

// MCPUpstreamGoneWatcher is a store that tells of deleted grants.
type MCPUpstreamGoneWatcher interface {
	// WatchMCPUpstreamTokensGone calls f with the rows each such
	// deletion removed (never empty), on the deleting caller's goroutine:
	// f must not block. stop ends the watch.
	WatchMCPUpstreamTokensGone(f func([]MCPUpstreamToken)) (stop func())
}

type goneWatchers struct {
	mu   sync.Mutex
	next int
	fs   map[int]func([]MCPUpstreamToken)
}

// WatchMCPUpstreamTokensGone adds f (see the interface).
func (s *sqlStore) WatchMCPUpstreamTokensGone(f func([]MCPUpstreamToken)) func() {
	w := &s.gone
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fs == nil {
		w.fs = map[int]func([]MCPUpstreamToken){}
	}
	id := w.next
	w.next++
	w.fs[id] = f
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		delete(w.fs, id)
	}
}

func (w *goneWatchers) tell(rows []MCPUpstreamToken) {
	if len(rows) == 0 {
		return
	}
	w.mu.Lock()
	fs := make([]func([]MCPUpstreamToken), 0, len(w.fs))
	for _, f := range w.fs {
		fs = append(fs, f)
	}
	w.mu.Unlock()
	for _, f := range fs {
		f(rows)
	}
}
