package upstream

import (
	"container/list"
	"sync"
	"time"
)

// Affinity remembers which deployment last served each agent session of an
// alias, so that the session's next request goes there first. A provider's
// prompt cache lives on the deployment (the account, region or server)
// that wrote it: a session balanced across deployments writes its cache on
// each of them and reads none, paying the write premium on every turn.
//
// The table is bounded twice: an entry unused for longer than its TTL is
// gone (no provider keeps a cache longer than an hour unused, so a pin
// older than that protects nothing), and past max entries the least
// recently used is dropped. It is safe for concurrent use.
type Affinity struct {
	mu  sync.Mutex
	max int
	ttl time.Duration
	ll  *list.List // of *affinityPin, most recently used first
	m   map[string]*list.Element
}

type affinityPin struct {
	key, deployment string
	used            time.Time
}

// Default bounds of the session-affinity table: an hour matches the
// longest prompt-cache TTL (Anthropic's 1-hour cache); 100 000 sessions
// hold at most a few tens of MB of keys.
const (
	DefaultAffinityTTL      = time.Hour
	DefaultAffinitySessions = 100_000
)

// NewAffinity returns an empty table of at most max sessions, each
// forgotten ttl after its last use.
func NewAffinity(max int, ttl time.Duration) *Affinity {
	if max < 1 {
		max = 1
	}
	return &Affinity{max: max, ttl: ttl, ll: list.New(), m: make(map[string]*list.Element)}
}

// AffinityKey is the table's key for a session of an alias under a key:
// the same session id sent with another gateway key or for another alias
// is another session.
func AffinityKey(keyID, alias, session string) string {
	return keyID + "\x00" + alias + "\x00" + session
}

// Get returns the deployment ID pinned for key at now, if any, and counts
// it as used.
func (a *Affinity) Get(key string, now time.Time) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.m[key]
	if !ok {
		return "", false
	}
	p := e.Value.(*affinityPin)
	if now.Sub(p.used) > a.ttl {
		a.ll.Remove(e)
		delete(a.m, key)
		return "", false
	}
	p.used = now
	a.ll.MoveToFront(e)
	return p.deployment, true
}

// Set pins key to the deployment with ID deployment, as used at now.
func (a *Affinity) Set(key, deployment string, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.m[key]; ok {
		p := e.Value.(*affinityPin)
		p.deployment, p.used = deployment, now
		a.ll.MoveToFront(e)
		return
	}
	a.m[key] = a.ll.PushFront(&affinityPin{key: key, deployment: deployment, used: now})
	for a.ll.Len() > a.max {
		old := a.ll.Back()
		a.ll.Remove(old)
		delete(a.m, old.Value.(*affinityPin).key)
	}
	// Expired entries at the back go too, so an idle table shrinks as it
	// is used instead of waiting to be full.
	for old := a.ll.Back(); old != nil && now.Sub(old.Value.(*affinityPin).used) > a.ttl; old = a.ll.Back() {
		a.ll.Remove(old)
		delete(a.m, old.Value.(*affinityPin).key)
	}
}

// Len is the number of sessions held (expired ones included until they
// are next touched or pushed out).
func (a *Affinity) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ll.Len()
}

// PinFirst returns ordered with the deployment whose ID is id moved to the
// front, keeping the others' order; ordered itself when id is absent or
// already first. ordered is never modified: a Selector may return its
// input, which is shared.
func PinFirst(ordered []*Deployment, id string) []*Deployment {
	at := -1
	for i, d := range ordered {
		if d.dep.ID == id {
			at = i
			break
		}
	}
	if at <= 0 {
		return ordered
	}
	out := make([]*Deployment, 0, len(ordered))
	out = append(out, ordered[at])
	out = append(out, ordered[:at]...)
	return append(out, ordered[at+1:]...)
}
