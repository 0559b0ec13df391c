package policy

import (
	"container/list"
	"math/bits"
	"sync"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// The rule of the unread-cache alert: a session whose last
// CacheAlertWindow requests (that used input tokens) include at least
// CacheAlertWrites that wrote a prompt cache and none that read one. A
// working agent reads its cache from its second turn on (Claude Code's
// every turn re-reads the prefix the previous one wrote), so writes
// without reads mean the cache is thrown away each turn: a prefix that
// changes (a timestamp in the system prompt, tools reordered) or requests
// landing on a deployment that does not hold it. Each write costs 1.25x
// to 2x the input price, so such a session pays more than one without a
// cache at all.
const (
	CacheAlertWrites = 4
	CacheAlertWindow = 10
)

// CacheWatch follows each session's recent cache writes and reads and
// alerts, once per session and day (claimed in the ledger like budget
// alerts), when a session keeps writing a cache it never reads. It holds
// at most maxSessions sessions, each forgotten an hour after its last
// request; it sees the requests of its own instance only.
type CacheWatch struct {
	notify func(BudgetAlert)

	mu  sync.Mutex
	ll  *list.List // of *watchedSession, most recent first
	m   map[string]*list.Element
	max int
}

type watchedSession struct {
	key           string
	writes, reads uint64 // one bit per request, newest in bit 0
	n             int    // requests seen, up to CacheAlertWindow
	writeCost     int64  // picodollars of cache writes since the last read
	alerted       bool   // since the last read
	used          time.Time
}

const (
	cacheWatchSessions = 50_000
	cacheWatchIdle     = time.Hour
)

// NewCacheWatch posts its alerts through notify (an Alerter's Notify).
func NewCacheWatch(notify func(BudgetAlert)) *CacheWatch {
	return &CacheWatch{notify: notify, ll: list.New(), m: make(map[string]*list.Element), max: cacheWatchSessions}
}

// Observe takes one finished request into account. A nil watch, a request
// outside a session, and one that used no input (it failed first) are
// ignored.
func (c *CacheWatch) Observe(r *ledger.Record) {
	if c == nil || r.SessionID == "" || r.Outcome != ledger.OutcomeOK || r.TotalInput() == 0 {
		return
	}
	key := ledger.SessionScopeID(r.KeyID, r.SessionID)
	now := r.Time
	wrote := r.CacheCreation5m+r.CacheCreation1h > 0
	read := r.CacheReadTokens > 0
	c.mu.Lock()
	s := c.session(key, now)
	mask := uint64(1)<<CacheAlertWindow - 1
	s.writes, s.reads = (s.writes<<1)&mask, (s.reads<<1)&mask
	s.n = min(s.n+1, CacheAlertWindow)
	if wrote {
		s.writes |= 1
		s.writeCost = min(ledger.MaxCost, s.writeCost+min(ledger.MaxCost, r.CacheCreation5m*r.Prices.CacheWrite5m+r.CacheCreation1h*r.Prices.CacheWrite1h))
	}
	if read {
		s.reads |= 1
		s.writeCost, s.alerted = 0, false
	}
	fire := !s.alerted && s.reads == 0 && bits.OnesCount64(s.writes) >= CacheAlertWrites
	var al BudgetAlert
	if fire {
		s.alerted = true
		label := "session " + r.SessionID + " (key " + r.KeyID
		if r.Agent != "" {
			label += ", " + r.Agent
		}
		label += ", model " + r.Alias + ")"
		day := now.UTC().Truncate(24 * time.Hour)
		al = BudgetAlert{Kind: AlertCacheUnread, Scope: ledger.ScopeSession, ScopeID: key, Label: label, PeriodStart: day,
			SpentPico: s.writeCost, Writes: bits.OnesCount64(s.writes), Window: s.n}
	}
	c.mu.Unlock()
	if fire && c.notify != nil {
		c.notify(al)
	}
}

// session returns key's entry, made or refreshed at now, dropping the
// least recently used past the bound and idle ones from the back.
func (c *CacheWatch) session(key string, now time.Time) *watchedSession {
	if e, ok := c.m[key]; ok {
		s := e.Value.(*watchedSession)
		if now.Sub(s.used) > cacheWatchIdle {
			*s = watchedSession{key: key}
		}
		s.used = now
		c.ll.MoveToFront(e)
		return s
	}
	s := &watchedSession{key: key, used: now}
	c.m[key] = c.ll.PushFront(s)
	for back := c.ll.Back(); back != nil && (c.ll.Len() > c.max || now.Sub(back.Value.(*watchedSession).used) > cacheWatchIdle); back = c.ll.Back() {
		c.ll.Remove(back)
		delete(c.m, back.Value.(*watchedSession).key)
	}
	return s
}

// Len is the number of sessions watched.
func (c *CacheWatch) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ll.Len()
}
