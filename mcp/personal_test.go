package mcp

import (
	"testing"
	"time"
)

// TestPersonalPoolBounds: idle sessions of a server close after
// personalIdle, others' stay; a full pool closes its least recently used
// session; forgetting a caller closes theirs.
func TestPersonalPoolBounds(t *testing.T) {
	now := time.Now()
	closed := map[personalKey]bool{}
	p := &personalPool{m: map[personalKey]*personalSession{}}
	add := func(server, unit string, idle time.Duration) personalKey {
		k := personalKey{server, unit}
		p.m[k] = &personalSession{last: now.Add(-idle), cancel: func() { closed[k] = true }}
		return k
	}
	stale := add("gh", "p:bob", personalIdle+time.Second)
	fresh := add("gh", "p:alice", time.Minute)
	other := add("linear", "p:bob", personalIdle+time.Second)
	p.evictIdle("gh", now)
	if !closed[stale] || closed[fresh] || closed[other] || len(p.m) != 2 {
		t.Fatalf("after the idle sweep of gh: closed %v, left %d", closed, len(p.m))
	}
	p.evictOldest()
	if !closed[other] || len(p.m) != 1 {
		t.Fatalf("evicting the oldest: closed %v, left %d", closed, len(p.m))
	}
	g := &Gateway{pool: personalPool{m: p.m}}
	g.forget("gh", "p:alice")
	if !closed[fresh] || len(g.pool.m) != 0 {
		t.Fatalf("forgetting alice: closed %v, left %d", closed, len(g.pool.m))
	}
}
