package handlers

import (
	"sync"

	"github.com/modelgate/modelgate/upstream"
)

// States holds every deployment's state, and every key's count of
// requests in progress, for the life of the process.
type States struct {
	mu   sync.Mutex
	m    map[string]*upstream.State
	keys map[string]*keySlots
	// affinity pins agent sessions to deployments
	// (router_settings.session_affinity); it lives here so that a reload
	// keeps the sessions where their caches are.
	affinity *upstream.Affinity
}

// NewStates returns an empty state table.
func NewStates() *States {
	return &States{m: make(map[string]*upstream.State), keys: make(map[string]*keySlots),
		affinity: upstream.NewAffinity(upstream.DefaultAffinitySessions, upstream.DefaultAffinityTTL)}
}

// keySlots counts one key's requests in progress. Entries are dropped when
// the count returns to zero so that a stream of one-off keys cannot grow
// the map.
type keySlots struct{ n int }

// acquireKey takes one of key's max concurrent slots and reports whether
// one was free. Every true result must be paired with releaseKey.
func (s *States) acquireKey(key string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks, ok := s.keys[key]
	if !ok {
		ks = &keySlots{}
		s.keys[key] = ks
	}
	if ks.n >= max {
		return false
	}
	ks.n++
	return true
}

func (s *States) releaseKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks, ok := s.keys[key]; ok {
		ks.n--
		if ks.n <= 0 {
			delete(s.keys, key)
		}
	}
}

// Get returns the state for the deployment with id, creating it on first
// use.
func (s *States) Get(id string) *upstream.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[id]
	if !ok {
		st = &upstream.State{}
		s.m[id] = st
	}
	return st
}
