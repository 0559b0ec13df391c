package policy

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/spendlimit"
)

// Budgets admits a request only while every budget that applies to it (its
// key's, its workspace's, its session's) has room, reserving a bounded
// estimate of its cost before the upstream call and settling the real
// cost after it, so concurrent requests cannot race past a budget. Spend
// comes from the ledger database (the budget_spend rows the ledger writer
// keeps with the records), refreshed every second, so with PostgreSQL
// every instance counts what the others spent; what this instance settled
// but the database does not show yet is held locally meanwhile.
type Budgets struct {
	store func() ledger.SpendStore // nil result: no database yet
	now   func() time.Time

	// Alert, when set, is told once a period when a budget's spend, this
	// instance's or another's, reaches its soft limit, 80 % or 100 %, and
	// when a budget refuses a request it could not pay for out of its
	// spend alone (budgets_alerts.go).
	Alert func(BudgetAlert)

	tickets atomic.Uint64 // numbers reservations, for their records
	// sharedDownUntil (Unix nanoseconds): the shared reservation store
	// failed; reserve in this process until then rather than wait on it
	// for every request. SharedFailures counts the requests that did.
	sharedDownUntil atomic.Int64
	SharedFailures  atomic.Int64
	// LeaseTopUps counts the round trips that topped up budget leases.
	LeaseTopUps atomic.Int64
	lastSweep   atomic.Int64
	batches     reserveQueues // shared reservations waiting, per set of budgets

	mu       sync.Mutex
	spent    map[budgetKey]int64 // from the database at the last refresh
	local    []*localSpend       // settled here, not yet in spent
	localSum map[budgetKey]int64 // local's costs per budget, kept with it
	reserved map[budgetKey]int64 // estimates of requests in flight
	// unwritten are the local spends whose records the ledger writer has
	// not finished; early are records it finished before their request
	// settled (a durable request waits for its record's write).
	unwritten map[uint64]*localSpend
	early     map[uint64]time.Time
	// sessions are the session budgets requests here were checked
	// against lately, with when: the only sessions whose spend a refresh
	// reads (clients choose session ids, so there may be millions).
	sessions map[string]time.Time
	leases   budgetLeases // budget headroom held in the database (budgets_lease.go)
	// watch are the budgets requests here were charged to or refused by
	// lately, with the alerts handed on for them (budgets_alerts.go).
	watch map[budgetKey]*budgetWatch
	// batchHolds are passed-through batches' holds counted here
	// (budgets_hold.go), by ticket.
	batchHolds map[uint64]batchHold
	// limits are the spend limits set through the API, as the last
	// refresh read them (budgets_scopes.go).
	limits atomic.Pointer[spendlimit.Set]
}

type budgetKey struct {
	scope, id, period string
	start             int64
}

type localSpend struct {
	keys   []budgetKey
	pico   int64
	at     time.Time
	ticket uint64
	// written is when the ledger writer was through with the record; a
	// refresh that starts after it reads the cost from the database, and
	// the local copy goes, so nothing is counted twice.
	written time.Time
}

// maxLocalAge bounds how long a settled cost whose record the writer has
// not reported is counted here (the database down for that long): past it
// the writer has given the record up or the process lost track of it.
const maxLocalAge = time.Hour

// NewBudgets returns budgets over the spend store store returns.
func NewBudgets(store func() ledger.SpendStore, now func() time.Time) *Budgets {
	if now == nil {
		now = time.Now
	}
	b := &Budgets{store: store, now: now, spent: map[budgetKey]int64{}, reserved: map[budgetKey]int64{}, localSum: map[budgetKey]int64{},
		unwritten: map[uint64]*localSpend{}, early: map[uint64]time.Time{}, sessions: map[string]time.Time{}}
	// Tickets name reservations in a database other instances share: each
	// process numbers from its own random point of a 2^62 space.
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	b.tickets.Store(binary.LittleEndian.Uint64(seed[:]) >> 2)
	return b
}

// Written is told of records the ledger writer is through with: their
// costs are in the database from now on.
func (b *Budgets) Written(batch []ledger.Record) {
	if b == nil {
		return
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range batch {
		t := batch[i].Ticket
		if t == 0 {
			continue
		}
		if batch[i].Lease != 0 {
			b.writtenLocked(t)
		}
		if l, ok := b.unwritten[t]; ok {
			l.written = now
			delete(b.unwritten, t)
		} else {
			b.early[t] = now
		}
	}
}

// Refresh reloads the spend of the current periods from the database.
func (b *Budgets) Refresh(ctx context.Context) error {
	if b == nil || b.store == nil {
		return nil
	}
	st := b.store()
	if st == nil {
		return nil
	}
	now := b.now()
	b.mu.Lock()
	sessions := make([]string, 0, len(b.sessions))
	for id, seen := range b.sessions {
		if now.Sub(seen) > sessionWatch {
			delete(b.sessions, id)
			continue
		}
		sessions = append(sessions, id)
	}
	b.mu.Unlock()
	rows, err := st.CurrentSpend(ctx, now, sessions)
	if err != nil {
		return err
	}
	spent := make(map[budgetKey]int64, len(rows))
	for _, r := range rows {
		spent[budgetKey{r.Scope, r.ScopeID, r.Period, r.PeriodStart.UnixMicro()}] = r.SpentPico
	}
	b.mu.Lock()
	b.spent = spent
	keep := b.local[:0]
	for _, l := range b.local {
		switch {
		case !l.written.IsZero() && l.written.Before(now):
			// The read began after the record's write: spent has it.
			b.addLocal(l, -1)
		case now.Sub(l.at) >= maxLocalAge:
			delete(b.unwritten, l.ticket)
			b.addLocal(l, -1)
		default:
			keep = append(keep, l)
		}
	}
	clear(b.local[len(keep):])
	b.local = keep
	for t, at := range b.early {
		if now.Sub(at) >= time.Minute {
			delete(b.early, t) // its request never settled a cost
		}
	}
	if b.Alert != nil {
		// What other instances spent moved the budgets too.
		b.checkWatchedLocked(now)
	}
	b.mu.Unlock()
	// A failed read keeps the limits last read; the spend is new anyway.
	return b.refreshLimits(ctx, st)
}

// sessionWatch is how long a session budget no request was checked
// against stays in the refresh.
const sessionWatch = 24 * time.Hour

// Poll refreshes every interval until ctx ends.
func (b *Budgets) Poll(ctx context.Context, interval time.Duration, failed func(error)) {
	poll(ctx, interval, func(ctx context.Context) error {
		// Leases first: a failing spend read must not keep idle headroom
		// held.
		leaseErr := b.maintainLeases(ctx)
		if err := b.Refresh(ctx); err != nil {
			return err
		}
		return errors.Join(leaseErr, b.sweep(ctx))
	}, failed)
}

// sweepEvery spaces the deletes of expired shared reservations: they stop
// counting when they expire, the sweep only keeps the table small.
const sweepEvery = 30 * time.Second

func (b *Budgets) sweep(ctx context.Context) error {
	rs := b.reserver()
	now := b.now()
	if rs == nil || now.UnixNano()-b.lastSweep.Load() < int64(sweepEvery) {
		return nil
	}
	b.lastSweep.Store(now.UnixNano())
	return rs.SweepReservations(ctx, now)
}

// reserver is the store's shared reservations, nil when it keeps none.
func (b *Budgets) reserver() ledger.BudgetReserver {
	if b.store == nil {
		return nil
	}
	rs, ok := b.store().(ledger.BudgetReserver)
	if !ok || !rs.SharesReservations() {
		return nil
	}
	return rs
}

// retrySharedReservations is how long a failing shared reservation store is left
// alone, as for the shared rate counter.
const retrySharedReservations = 5 * time.Second

// sharedReserveTimeout bounds one shared reservation: past it the request
// gets 503 with retry-after (a database that refuses connections instead
// makes this process count alone for retrySharedReservations).
const sharedReserveTimeout = 5 * time.Second

// budget is one budget that applies to a request.
type budget struct {
	key       budgetKey
	limitPico int64
	softPico  int64 // alert-only limit, 0 when none
	resets    time.Time
	// keyID and session name a session budget's owner for its label.
	keyID, session string
	// limit is the spend limit set through the API or a group rule that
	// made the budget; nil for a key's, workspace's or session's own.
	limit *spendlimit.Applied
}

// label names the budget in refusals and alerts ("api key alice",
// "workspace frontend", "session s1 of key alice"); made only then.
func (bg *budget) label() string {
	switch bg.key.scope {
	case ledger.ScopeKey:
		return "api key " + bg.key.id
	case ledger.ScopeWorkspace:
		return "workspace " + bg.key.id
	}
	if bg.key.scope == ledger.ScopeSession {
		return "session " + bg.session + " of key " + bg.keyID
	}
	return scopeLabel(bg)
}

// BudgetAlert is a threshold a budget's spend crossed.
type BudgetAlert struct {
	Kind        string // "soft", "80", "100", "session", or AlertCacheUnread
	Scope       string // ledger.ScopeKey, ScopeWorkspace, ScopeSession
	ScopeID     string
	Label       string
	Period      string
	PeriodStart time.Time
	SpentPico   int64
	LimitPico   int64 // the budget (the soft limit for "soft")
	// NeedPico: a "100" or "session" alert sent by a refusal while spend
	// is under the limit carries what the refused request needed at least
	// (its input and one output token per choice), more than is left.
	NeedPico int64
	Resets   time.Time
	// Writes and Window: for AlertCacheUnread, the cache writes among the
	// session's last Window requests (none of which read the cache);
	// SpentPico is then what its cache writes cost since its last read.
	Writes, Window int
}

// AlertCacheUnread is the kind of the alert a CacheWatch sends.
const AlertCacheUnread = "cache_unread"

// applicable lists the budgets of the caller, its workspace and session.
func applicable(id *Identity, ws ledger.Limits, session string, now time.Time) []budget {
	out := appendBudget(nil, id, session, now, ledger.ScopeKey, id.KeyID, id.Limits.BudgetCents, id.Limits.BudgetPeriod, id.Limits.SoftBudgetCents)
	if id.Workspace != "" {
		out = appendBudget(out, id, session, now, ledger.ScopeWorkspace, id.Workspace, ws.BudgetCents, ws.BudgetPeriod, ws.SoftBudgetCents)
	}
	if session != "" {
		cap := id.Limits.SessionBudgetCents
		if cap == nil {
			cap = ws.SessionBudgetCents
		}
		if cap != nil { // the scope's id is built only for a budget
			out = appendBudget(out, id, session, now, ledger.ScopeSession, ledger.SessionScopeID(id.KeyID, session), cap, "total", 0)
		}
	}
	return out
}

// appendBudget appends the budget of cents on scope to out: nothing when
// cents is nil (no budget; 0 is a budget that admits no paid use), and
// room for all three a request can have at the first, so admission
// allocates one slice for its budgets and none when it has none.
func appendBudget(out []budget, id *Identity, session string, now time.Time, scope, scopeID string, cents *int64, period string, softCents int64) []budget {
	if cents == nil {
		return out
	}
	if out == nil {
		out = make([]budget, 0, 3)
	}
	if period == "" {
		period = "total"
	}
	// Every entry point bounds amounts; the clamp keeps a row stored
	// before the bound from overflowing into a negative limit.
	limit, soft := min(max(*cents, 0), money.MaxBudgetCents), min(max(softCents, 0), money.MaxBudgetCents)
	start, resets := ledger.PeriodBounds(period, now)
	return append(out, budget{key: budgetKey{scope, scopeID, period, start.UnixMicro()},
		limitPico: limit * 1e10, softPico: soft * 1e10, resets: resets, keyID: id.KeyID, session: session})
}

// Reservation is what an admitted request holds until it settles.
type Reservation struct {
	b       *Budgets
	keys    []budgetKey
	budgets []budget
	pico    int64    // what is reserved: the estimate, or what was left
	est     Estimate // what was asked for
	ticket  uint64
	// lease: the estimate was drawn from this budget lease; leasePico is
	// what the lease holds for the request (its cost once settled).
	lease     *leaseTicket
	leasePico int64
	// local counts the cost the request was settled at here until its
	// record is written.
	local *localSpend
	// shared: the reservation is in the database too, until the request's
	// record is written there; done: it was settled.
	shared, done bool
}

// usedLocked is a budget's spend as this instance knows it.
func (b *Budgets) usedLocked(k budgetKey) int64 {
	return b.spent[k] + b.reserved[k] + b.localSum[k]
}

// addLocal counts l's cost on its budgets (sign 1) or stops counting it
// (-1); the caller holds mu.
func (b *Budgets) addLocal(l *localSpend, sign int64) {
	for _, k := range l.keys {
		if b.localSum[k] += sign * l.pico; b.localSum[k] == 0 {
			delete(b.localSum, k)
		}
	}
}

// Admit is AdmitEstimate for an estimate whose output bound cannot be
// lowered: it is admitted whole or refused.
func (b *Budgets) Admit(ctx context.Context, id *Identity, ws ledger.Limits, session string, estimatePico int64, lease time.Duration) (*Reservation, *apierror.Error) {
	return b.AdmitEstimate(ctx, id, ws, session, Estimate{InputPico: estimatePico}, lease)
}

// AdmitEstimate checks every budget that applies and reserves the
// request's estimate against each until the request settles, or for lease
// at most: the whole worst case when it fits, else what is left when that
// covers the estimate's floor (the reservation's OutputBound is then the
// lowered bound the request must be sent with); a budget without room for
// even the floor refuses the request. With a store that shares
// reservations (PostgreSQL) the reservation is made there, so that every
// instance sees it before the upstream call; while that store fails, this
// process's own count decides, as with one instance.
func (b *Budgets) AdmitEstimate(ctx context.Context, id *Identity, ws ledger.Limits, session string, est Estimate, lease time.Duration) (*Reservation, *apierror.Error) {
	if b == nil || id == nil {
		return nil, nil
	}
	now := b.now()
	return b.admit(ctx, b.applicable(id, ws, session, now), est, lease, now)
}

// admit is AdmitEstimate on the budgets in list.
func (b *Budgets) admit(ctx context.Context, list []budget, est Estimate, lease time.Duration, now time.Time) (*Reservation, *apierror.Error) {
	if len(list) == 0 || est.Pico() <= 0 {
		// A request estimated at nothing (a free local model) costs no
		// budget, so a spent one does not refuse it, nor does it need a
		// reservation.
		return nil, nil
	}
	// Locks are taken in one order everywhere (the ledger writer's too):
	// two admissions on overlapping budgets never wait on each other.
	slices.SortFunc(list, func(a, c budget) int { return compareBudgetKeys(a.key, c.key) })
	rs := b.reserver()
	shared := rs != nil && now.UnixNano() >= b.sharedDownUntil.Load()
	lr, leased := rs.(ledger.LeaseReserver)
	// The lease's name, built before the lock, which every admission of
	// the instance waits for (the name is the list's alone), in a buffer
	// on the stack: the common case only looks the lease up with it.
	var keyBuf [160]byte
	var key []byte
	if shared && leased {
		key = appendBudgetsKey(keyBuf[:0], list)
	}
	b.mu.Lock()
	for _, bg := range list {
		if bg.key.scope == ledger.ScopeSession {
			b.sessions[bg.key.id] = now
		}
	}
	grant, refusal := b.grantLocked(list, est, now)
	if refusal != nil {
		b.mu.Unlock()
		return nil, refusal
	}
	r := &Reservation{b: b, pico: grant, est: est, budgets: list, ticket: b.tickets.Add(1)}
	if shared && leased {
		// The common case: the lease this instance holds has the room.
		if c := b.drawLocked(b.leases.m[string(key)], r.ticket, grant, now); c != nil {
			r.lease, r.leasePico, r.shared = c, grant, true
			b.addReservedLocked(r, list)
			b.mu.Unlock()
			return r, nil
		}
	}
	b.mu.Unlock()
	if shared {
		rctx, cancel := context.WithTimeout(ctx, sharedReserveTimeout)
		var g ledger.LeaseGrant
		var err error
		if leased {
			r.lease, g, err = b.admitLease(rctx, lr, string(key), list, r.ticket, grant, min(est.floor(), grant), now)
			if err == nil && g.Refused == 0 {
				r.pico, r.leasePico = g.LastPico, g.LastPico
			}
		} else {
			g.Refused, g.UsedPico, err = b.reserveShared(rctx, rs, holdsOf(list), r.ticket, grant, now, now.Add(lease))
			g.SpentPico = -1
		}
		timedOut := rctx.Err() != nil || errors.Is(err, context.DeadlineExceeded)
		cancel()
		switch {
		case err == nil && g.Refused > 0 && g.Refused <= len(list):
			bg := list[g.Refused-1]
			b.mu.Lock()
			defer b.mu.Unlock()
			spent := g.SpentPico
			if spent < 0 { // the store did not say: this instance's count
				spent = b.usedLocked(bg.key) - b.reserved[bg.key]
			}
			spent, reserved := b.splitShared(bg.key, g.UsedPico, spent)
			return nil, b.refuseLocked(bg, spent, reserved, est.floor(), now)
		case err == nil:
			r.shared = true
		case ctx.Err() != nil:
			// The client left; nothing was reserved for it.
			return nil, &apierror.Error{Status: 499, Message: "client closed the request"}
		case timedOut || !ledger.Unreachable(err):
			// The database answers, slowly or with an error: admitting on
			// this process's count now is how N instances would each
			// spend a budget, so the request waits for a better moment.
			b.SharedFailures.Add(1)
			return nil, &apierror.Error{Status: http.StatusServiceUnavailable, RetryAfter: "1", Code: "budget_check_unavailable",
				Message: "the budget this request is charged to could not be checked (the ledger database is slow or refused the reservation); retry"}
		default:
			// The database cannot be reached: count here for a while, as
			// one instance would, rather than refuse every budgeted
			// request while it is down.
			b.SharedFailures.Add(1)
			b.sharedDownUntil.Store(now.Add(retrySharedReservations).UnixNano())
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !r.shared {
		// Checked again: other requests may have reserved meanwhile.
		again, refusal := b.grantLocked(list, est, now)
		if refusal != nil {
			return nil, refusal
		}
		r.pico = min(r.pico, again)
	}
	b.addReservedLocked(r, list)
	return r, nil
}

// addReservedLocked counts r's estimate on its budgets here until it
// settles; the caller holds mu.
func (b *Budgets) addReservedLocked(r *Reservation, list []budget) {
	if r.keys == nil {
		r.keys = make([]budgetKey, 0, len(list))
	}
	for _, bg := range list {
		r.keys = append(r.keys, bg.key)
		b.reserved[bg.key] += r.pico
	}
}

// appendBudgetsKey appends the name of a set of budgets and their limits
// (as holdsKey) to b.
func appendBudgetsKey(b []byte, list []budget) []byte {
	for _, bg := range list {
		b = append(b, bg.key.scope...)
		b = append(b, 0)
		b = append(b, bg.key.id...)
		b = append(b, 0)
		b = append(b, bg.key.period...)
		b = append(b, 0)
		b = strconv.AppendInt(b, bg.key.start, 10)
		b = append(b, 0)
		b = strconv.AppendInt(b, bg.limitPico, 10)
		b = append(b, 1)
	}
	return b
}

func compareBudgetKeys(a, b budgetKey) int {
	return cmp.Or(strings.Compare(a.scope, b.scope), strings.Compare(a.id, b.id), strings.Compare(a.period, b.period), cmp.Compare(a.start, b.start))
}

// BudgetStatus is one budget as /v1/me shows it.
type BudgetStatus struct {
	Scope     string  `json:"scope"`
	Period    string  `json:"period"`
	Amount    string  `json:"amount"`
	Spent     string  `json:"spent"`
	Remaining string  `json:"remaining"`
	ResetsAt  *string `json:"resets_at"`
	// ScopeID and Source name a spend limit's scope and where it was
	// set (budgets_scopes.go); empty for the key's and workspace's own.
	ScopeID string       `json:"scope_id,omitempty"`
	Source  *LimitSource `json:"source,omitempty"`
}

// Status is every budget that applies to the caller, with what it spent.
func (b *Budgets) Status(id *Identity, ws ledger.Limits, session string) []BudgetStatus {
	out := []BudgetStatus{}
	if b == nil || id == nil {
		return out
	}
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, bg := range b.applicable(id, ws, session, now) {
		spent := b.usedLocked(bg.key) - b.reserved[bg.key]
		s := BudgetStatus{Scope: bg.key.scope, Period: bg.key.period,
			Amount: strconv.FormatInt(bg.limitPico/1e10, 10), Spent: ledger.ShortCents(spent),
			Remaining: ledger.ShortCents(max(bg.limitPico-spent, 0))}
		statusSource(&s, &bg)
		if !bg.resets.IsZero() {
			r := bg.resets.UTC().Format(time.RFC3339)
			s.ResetsAt = &r
		}
		out = append(out, s)
	}
	return out
}
