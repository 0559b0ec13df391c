package secretscan

import (
	"container/list"
	"crypto/sha256"
	"strconv"
	"sync"
)

// Placeholders numbers secrets per session so that the same value gets the
// same placeholder in every request of the session ("the same key" stays
// the same to the model, and a prompt cache's prefix stays the same). It
// keeps a digest of each value, never the value, in memory only; it is
// bounded in sessions (least recently used forgotten first) and in values
// per session (the numbering of a session that overflows starts again).
type Placeholders struct {
	mu          sync.Mutex
	maxSessions int
	maxValues   int
	lru         *list.List // of *Names, most recent first
	byScope     map[string]*list.Element
}

// NewPlaceholders bounds the table: maxSessions sessions of maxValues
// secrets each (both at least 1).
func NewPlaceholders(maxSessions, maxValues int) *Placeholders {
	return &Placeholders{
		maxSessions: max(maxSessions, 1),
		maxValues:   max(maxValues, 1),
		lru:         list.New(),
		byScope:     map[string]*list.Element{},
	}
}

// Names is one session's numbering.
type Names struct {
	scope string
	p     *Placeholders
	byKey map[[sha256.Size]byte]int
}

// For returns the numbering of scope (a session id, or the key's id when
// the request names no session).
func (p *Placeholders) For(scope string) *Names {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e, ok := p.byScope[scope]; ok {
		p.lru.MoveToFront(e)
		return e.Value.(*Names)
	}
	n := &Names{scope: scope, p: p, byKey: map[[sha256.Size]byte]int{}}
	p.byScope[scope] = p.lru.PushFront(n)
	for p.lru.Len() > p.maxSessions {
		old := p.lru.Back()
		p.lru.Remove(old)
		delete(p.byScope, old.Value.(*Names).scope)
	}
	return n
}

// Sessions is how many sessions the table holds now.
func (p *Placeholders) Sessions() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lru.Len()
}

// Placeholder is [REDACTED:rule:n], n the value's number in the session.
func (n *Names) Placeholder(rule, value string) string {
	k := sha256.Sum256([]byte(value))
	n.p.mu.Lock()
	num, ok := n.byKey[k]
	if !ok {
		if len(n.byKey) >= n.p.maxValues {
			clear(n.byKey)
		}
		num = len(n.byKey) + 1
		n.byKey[k] = num
	}
	n.p.mu.Unlock()
	return "[REDACTED:" + rule + ":" + strconv.Itoa(num) + "]"
}
