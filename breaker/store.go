package breaker

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// Store holds the sessions' watch: in this process (Memory), or in Redis
// so that every instance sees one session (Redis). A session is named by
// its scope (ledger.SessionScopeID: key and session id); its turns are
// kept per conversation (thread) within it.
type Store interface {
	// Turn counts a request of the session: unless its tail is the one
	// counted last (a retry) or the session is paused or stopped, the
	// turn count goes up and m, when its key is not 0, joins the ring of
	// thread. With l.head != 0 (the conversation view's turns, see
	// conversation.go), a turn that does not extend the last one counted
	// (l.prev is not the head it left) first forgets the scope's turns,
	// ring and spend: the scope is more than one conversation; the turn's
	// head is then the scope's. It returns the session's state after.
	Turn(ctx context.Context, scope string, thread, tail uint64, m mark, l link, now time.Time) (state, error)
	// Extend moves a conversation's head to l.head when the turn extends
	// it (l.prev is its head) or repeats its last turn, and reports the state and whether it did;
	// it creates nothing.
	Extend(ctx context.Context, scope string, l link, now time.Time) (s state, extended bool, err error)
	// Spend adds what a request of the session cost.
	Spend(ctx context.Context, scope string, pico int64, now time.Time) error
	// Trip records a trip if the session's trip count is still seen (no
	// other instance tripped it since): its status becomes status ("" for
	// a warning or nudge), its pattern and resume token are set and the
	// thread's ring is emptied. It reports whether this call tripped it.
	Trip(ctx context.Context, scope string, thread uint64, seen int64, t tripState) (bool, error)
	// Resume clears a pause: with the token of its link, or with token ""
	// (an admin, who may clear a stop too). It reports the status the
	// session had ("" when it was not held) and whether it is now clear.
	Resume(ctx context.Context, scope, token string) (was string, ok bool, err error)
	// Peek is the session's state without counting anything; found is
	// false for a session the store does not know.
	Peek(ctx context.Context, scope string) (s state, found bool, err error)
	// Hold puts a conversation (scope) under the hold of the session
	// holder at the turn whose head is head (hold.go). Turn and Extend
	// move the hold's head along with a turn that repeats or extends it,
	// and return holder and hold in the state.
	Hold(ctx context.Context, scope, holder string, head uint64, now time.Time) error
}

// link chains a conversation's turns: see print's prev and head.
type link struct{ prev, head uint64 }

// tripState is what a trip changes.
type tripState struct {
	status, pattern, token string
	vtrip                  int64 // the minute, for a velocity trip; else 0
}

// idle is how long a session's watch outlives its last request: a pause
// must still hold the next morning.
const idle = 24 * time.Hour

// Memory is a Store in this process: at most maxSessions sessions, the
// least recently used dropped first but for held ones (evict).
type Memory struct {
	mu  sync.Mutex
	ll  *list.List // of *memSession, most recent first
	m   map[string]*list.Element
	max int
}

type memSession struct {
	scope   string
	used    time.Time
	s       state
	tail    uint64
	head    uint64 // the conversation's last turn's (link)
	threads map[uint64][]mark
	// holder and hold are a session trip's hold on the conversation.
	holder string
	hold   uint64
}

// follow moves the hold's head along with a turn that repeats or extends
// the held one.
func (ms *memSession) follow(l link) {
	if ms.holder != "" && l.head != 0 && (ms.hold == l.prev || ms.hold == l.head) {
		ms.hold = l.head
	}
}

// maxThreads bounds a session's conversations (a subagent each).
const maxThreads = 8

// NewMemory holds at most maxSessions sessions.
func NewMemory(maxSessions int) *Memory {
	return &Memory{ll: list.New(), m: map[string]*list.Element{}, max: maxSessions}
}

func (m *Memory) session(scope string, now time.Time, create bool) *memSession {
	if e, ok := m.m[scope]; ok {
		ms := e.Value.(*memSession)
		if now.Sub(ms.used) <= idle {
			ms.used = now
			m.ll.MoveToFront(e)
			return ms
		}
		m.ll.Remove(e)
		delete(m.m, scope)
	}
	if !create {
		return nil
	}
	ms := &memSession{scope: scope, used: now, threads: map[uint64][]mark{}}
	m.m[scope] = m.ll.PushFront(ms)
	m.evict(now)
	return ms
}

// evict drops the sessions idle past a day, and the least recently used
// over max. A paused or stopped session is passed over (moved to the
// front) while the sessions number under twice max: a flood of one-shot
// requests, another key's included, must not lift a hold that only its
// link or an admin may clear.
func (m *Memory) evict(now time.Time) {
	for spins := m.ll.Len(); spins > 0; spins-- {
		back := m.ll.Back()
		ms := back.Value.(*memSession)
		stale := now.Sub(ms.used) > idle
		if !stale && m.ll.Len() <= m.max {
			return
		}
		if !stale && (ms.s.status != "" || ms.holder != "") && m.ll.Len() <= 2*m.max {
			m.ll.MoveToFront(back)
			continue
		}
		m.ll.Remove(back)
		delete(m.m, ms.scope)
	}
}

// Turn implements Store.
func (m *Memory) Turn(_ context.Context, scope string, thread, tail uint64, mk mark, l link, now time.Time) (state, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.session(scope, now, true)
	ms.follow(l)
	s := ms.s
	switch {
	case s.status != "":
	case ms.tail == tail && tail != 0:
		s.dup = true
	default:
		if l.head != 0 {
			if ms.head != 0 && ms.head != l.prev {
				clear(ms.threads)
				ms.s.turns, ms.s.spent, ms.s.window = 0, 0, [velocityMinutes]bucket{}
			}
			ms.head = l.head
		}
		ms.tail = tail
		ms.s.turns++
		s = ms.s
		if mk.key != 0 {
			ring, ok := ms.threads[thread]
			if !ok && len(ms.threads) >= maxThreads {
				clear(ms.threads)
			}
			if len(ring) == ringSize {
				ring = append(ring[:0], ring[1:]...)
			}
			ms.threads[thread] = append(ring, mk)
		}
	}
	s.ring = append([]mark(nil), ms.threads[thread]...)
	s.head, s.holder, s.hold = ms.head, ms.holder, ms.hold
	return s, nil
}

// Spend implements Store.
func (m *Memory) Spend(_ context.Context, scope string, pico int64, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.session(scope, now, true)
	ms.s.spent += pico
	minute := now.Unix() / 60
	b := &ms.s.window[minute%velocityMinutes]
	if b.minute != minute {
		*b = bucket{minute: minute}
	}
	b.pico += pico
	return nil
}

// Trip implements Store.
func (m *Memory) Trip(_ context.Context, scope string, thread uint64, seen int64, t tripState) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[scope]
	if !ok {
		return false, nil
	}
	ms := e.Value.(*memSession)
	if ms.s.trips != seen {
		return false, nil
	}
	ms.s.trips++
	ms.s.status, ms.s.pattern, ms.s.token = t.status, t.pattern, t.token
	if t.vtrip != 0 {
		ms.s.vtrip = t.vtrip
	}
	delete(ms.threads, thread)
	return true, nil
}

// Resume implements Store.
func (m *Memory) Resume(_ context.Context, scope, token string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[scope]
	if !ok || e.Value.(*memSession).s.status == "" {
		return "", false, nil
	}
	ms := e.Value.(*memSession)
	was := ms.s.status
	if token != "" && (was != ActionPause || !tokenEqual(ms.s.token, token)) {
		return was, false, nil
	}
	ms.s.status, ms.s.token = "", ""
	return was, true, nil
}

// Extend implements Store.
func (m *Memory) Extend(_ context.Context, scope string, l link, now time.Time) (state, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.session(scope, now, false)
	if ms == nil {
		return state{}, false, nil
	}
	ms.follow(l)
	if ms.head == 0 || (ms.head != l.prev && ms.head != l.head) {
		return state{holder: ms.holder, hold: ms.hold}, false, nil
	}
	ms.head = l.head
	s := ms.s
	s.holder, s.hold = ms.holder, ms.hold
	return s, true, nil
}

// Hold implements Store.
func (m *Memory) Hold(_ context.Context, scope, holder string, head uint64, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := m.session(scope, now, true)
	ms.holder, ms.hold = holder, head
	return nil
}

// Peek implements Store.
func (m *Memory) Peek(_ context.Context, scope string) (state, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[scope]
	if !ok {
		return state{}, false, nil
	}
	return e.Value.(*memSession).s, true, nil
}
