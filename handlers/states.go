package handlers

import (
	"sync"

	"github.com/modelgate/modelgate/upstream"
)

// States holds every deployment's state for the life of the process.
type States struct {
	mu sync.Mutex
	m  map[string]*upstream.State
	// affinity pins agent sessions to deployments
	// (router_settings.session_affinity); it lives here so that a reload
	// keeps the sessions where their caches are.
	affinity *upstream.Affinity
}

// NewStates returns an empty state table.
func NewStates() *States {
	return &States{m: make(map[string]*upstream.State),
		affinity: upstream.NewAffinity(upstream.DefaultAffinitySessions, upstream.DefaultAffinityTTL)}
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
