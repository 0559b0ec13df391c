package policy

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Budget leases (ledger LeaseReserver): rather than a reservation per
// request, or per batch of requests, in the database, this instance holds
// headroom on each set of budgets it admits on as one lease and draws
// each request's estimate from it in memory. The lease is topped up in
// one transaction when it runs out, by about leaseWindow of this
// instance's recent spending, and near a limit by exactly the waiting
// requests' estimates (the database grants extra headroom only far from
// every limit), so admission there is what serial reservations give. A
// request's estimate stays drawn until the ledger writer reports its
// record written, whose insert took the estimate off the lease's rows in
// the transaction that added its cost to budget_spend. Headroom unused
// for leaseIdle is given back. The rows live leaseRowsLife past their
// last renewal, which the instance makes every few seconds while it
// lives, so those of an instance that dies stop counting within
// leaseRowsLife, however long the requests it served could run.

// leaseWindow is how much of its recent spending rate a lease asks for
// beyond the requests waiting.
const leaseWindow = 250 * time.Millisecond

// leaseIdle is how long a lease no request drew from keeps its unused
// headroom.
const leaseIdle = 1500 * time.Millisecond

// leaseRowsLife is how long a lease's rows count past their last renewal;
// a renewal moves them on once leaseRenew of it has passed.
const (
	leaseRowsLife = 40 * time.Second
	leaseRenew    = 5 * time.Second
)

// leaseTicket is one lease's rows as this instance knows them.
type leaseTicket struct {
	ticket uint64
	held   int64 // pico in each of its rows
	drawn  int64 // estimates of requests whose records are not written
	// expires: the rows stop counting then unless renewed.
	expires time.Time
	retired bool // replaced by a new ticket; ends when nothing is drawn
	lease   *budgetLease
}

// budgetLease is the lease on one set of budgets.
type budgetLease struct {
	key     string
	holds   []ledger.BudgetHold
	cur     *leaseTicket
	pending []*leaseWaiter
	topping bool // a top-up is in flight: requests queue behind it
	// tight: the last top-up left the lease no spare headroom (near a
	// limit), so a settled request's unused estimate goes back at once.
	tight bool
	// lastDraw, and the spending rate (pico/s) measured from rateStart.
	lastDraw  time.Time
	rateStart time.Time
	ratePico  int64
	rate      float64
}

type leaseWaiter struct {
	pico, floor int64 // the estimate, and the least it may be admitted on
	done        chan leaseResult
	sent        bool
}

type leaseResult struct {
	t   *leaseTicket
	g   ledger.LeaseGrant // Refused and what that hold used; LastPico: what was drawn
	err error
}

// leaseDraw is one admitted request's estimate, until its record is
// written (or maxLocalAge passed: its record was dropped).
type leaseDraw struct {
	t    *leaseTicket
	pico int64
	at   time.Time
}

// budgetLeases are the leases of a Budgets; its mu guards them.
type budgetLeases struct {
	m         map[string]*budgetLease
	byTicket  map[uint64]*leaseTicket
	draws     map[uint64]leaseDraw // by request ticket
	lastPrune time.Time
}

// leaser is the store's budget leases, nil when it keeps none.
func (b *Budgets) leaser() ledger.LeaseReserver {
	rs := b.reserver()
	if lr, ok := rs.(ledger.LeaseReserver); ok {
		return lr
	}
	return nil
}

func holdsOf(list []budget) []ledger.BudgetHold {
	holds := make([]ledger.BudgetHold, len(list))
	for i, bg := range list {
		holds[i] = ledger.BudgetHold{Scope: bg.key.scope, ScopeID: bg.key.id, Period: bg.key.period,
			PeriodStart: time.UnixMicro(bg.key.start), LimitPico: bg.limitPico}
	}
	return holds
}

// drawLocked admits pico from the lease on list when it has the room and
// its rows are not about to lapse, with no top-up in flight; the caller
// holds mu.
func (b *Budgets) drawLocked(l *budgetLease, ticket uint64, pico int64, now time.Time) *leaseTicket {
	if l == nil || l.topping || len(l.pending) > 0 {
		return nil
	}
	c := l.cur
	if c.held-c.drawn < pico || now.Add(leaseMargin).After(c.expires) {
		return nil
	}
	b.noteDrawLocked(l, c, ticket, pico, now)
	return c
}

func (b *Budgets) noteDrawLocked(l *budgetLease, c *leaseTicket, ticket uint64, pico int64, now time.Time) {
	c.drawn += pico
	l.lastDraw = now
	l.ratePico += pico
	if b.leases.draws == nil {
		b.leases.draws = map[uint64]leaseDraw{}
	}
	b.leases.draws[ticket] = leaseDraw{t: c, pico: pico, at: now}
}

// admitLease queues a request the lease could not admit at once for the
// next top-up of the lease, and waits for it: it is admitted on pico, or
// on what is left down to floor (the grant's LastPico).
func (b *Budgets) admitLease(ctx context.Context, lr ledger.LeaseReserver, key string, list []budget, ticket uint64, pico, floor int64, now time.Time) (*leaseTicket, ledger.LeaseGrant, error) {
	w := &leaseWaiter{pico: pico, floor: floor, done: make(chan leaseResult, 1)}
	b.mu.Lock()
	L := &b.leases
	l := L.m[key]
	if l == nil {
		if L.m == nil {
			L.m, L.byTicket = map[string]*budgetLease{}, map[uint64]*leaseTicket{}
		}
		l = &budgetLease{key: key, holds: holdsOf(list), rateStart: now}
		l.cur = &leaseTicket{ticket: b.tickets.Add(1), lease: l}
		L.m[key] = l
		L.byTicket[l.cur.ticket] = l.cur
	}
	// Another request may have topped the lease up meanwhile.
	if !l.topping && len(l.pending) == 0 {
		if c := b.drawLocked(l, ticket, pico, now); c != nil {
			b.mu.Unlock()
			return c, ledger.LeaseGrant{Admitted: 1, LastPico: pico}, nil
		}
	}
	l.pending = append(l.pending, w)
	if !l.topping {
		l.topping = true
		go b.topUp(lr, l)
	}
	b.mu.Unlock()
	var res leaseResult
	select {
	case res = <-w.done:
	case <-ctx.Done():
		b.mu.Lock()
		if !w.sent {
			l.pending = slices.DeleteFunc(l.pending, func(p *leaseWaiter) bool { return p == w })
			b.mu.Unlock()
			return nil, ledger.LeaseGrant{}, ctx.Err()
		}
		b.mu.Unlock()
		// In a top-up already: if it admits the request, the request
		// holds its draw, so that its record frees it.
		res = <-w.done
	}
	if res.t != nil {
		// The top-up counted the draw on the ticket; its record frees it.
		b.mu.Lock()
		if b.leases.draws == nil {
			b.leases.draws = map[uint64]leaseDraw{}
		}
		b.leases.draws[ticket] = leaseDraw{t: res.t, pico: res.g.LastPico, at: now}
		b.mu.Unlock()
	}
	return res.t, res.g, res.err
}

// leaseMargin: a lease whose rows expire sooner than this is replaced by
// a new one rather than topped up (its rows may lapse mid-call).
const leaseMargin = 10 * time.Second

// topUp tops l up for its waiting requests, a batch at a time, until none
// is left.
func (b *Budgets) topUp(lr ledger.LeaseReserver, l *budgetLease) {
	for {
		now := b.now()
		b.mu.Lock()
		batch := l.pending
		if len(batch) > maxReserveBatch {
			batch = batch[:maxReserveBatch]
		}
		l.pending = l.pending[len(batch):]
		if len(batch) == 0 {
			l.topping = false
			b.mu.Unlock()
			return
		}
		c := l.cur
		if c.held > 0 && now.Add(leaseMargin).After(c.expires) {
			c = b.renewTicketLocked(l)
		}
		ests, floors := make([]int64, len(batch)), make([]int64, len(batch))
		for i, w := range batch {
			w.sent = true
			ests[i], floors[i] = w.pico, w.floor
		}
		if el := now.Sub(l.rateStart); el >= 20*time.Millisecond {
			l.rate = (l.rate + float64(l.ratePico)/el.Seconds()) / 2
			l.rateStart, l.ratePico = now, 0
		}
		want := int64(l.rate * leaseWindow.Seconds())
		residual := c.held - c.drawn
		expires := now.Add(leaseRowsLife)
		if c.expires.After(expires) {
			expires = c.expires
		}
		b.mu.Unlock()

		b.LeaseTopUps.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), sharedReserveTimeout)
		g, err := lr.TopUpLease(ctx, l.holds, c.ticket, ests, floors, residual, want, now, expires)
		if err != nil && ctx.Err() != nil {
			err = context.DeadlineExceeded
		}
		cancel()

		b.mu.Lock()
		if err != nil {
			// The rows may or may not have grown: the ticket is trusted
			// no more (its rows expire; a drawn-out one is deleted).
			g.Admitted = 0
			if l.cur == c {
				b.renewTicketLocked(l)
			}
		} else {
			c.held += g.Grown
			c.expires = expires
		}
		for i, w := range batch {
			if i < g.Admitted {
				drawn := w.pico
				if i == g.Admitted-1 {
					drawn = g.LastPico // all that was left, when not w.pico
				}
				c.drawn += drawn
				l.lastDraw = now
				l.ratePico += drawn
				w.done <- leaseResult{t: c, g: ledger.LeaseGrant{Admitted: 1, LastPico: drawn}}
			} else {
				w.done <- leaseResult{g: g, err: err}
			}
		}
		l.tight = c.held <= c.drawn
		if len(l.pending) == 0 {
			// Ended before the admitted requests can run (they wait for
			// mu): one that settles at once finds no top-up in flight
			// and gives its unused estimate back.
			l.topping = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
	}
}

// renewTicketLocked gives l a new ticket; the old one ends once nothing
// drawn from it is left (its unused headroom lapses with its rows). The
// caller holds mu.
func (b *Budgets) renewTicketLocked(l *budgetLease) *leaseTicket {
	old := l.cur
	old.retired = true
	if old.drawn <= 0 {
		delete(b.leases.byTicket, old.ticket)
	}
	l.cur = &leaseTicket{ticket: b.tickets.Add(1), lease: l}
	b.leases.byTicket[l.cur.ticket] = l.cur
	return l.cur
}

// writtenLocked frees the draw of a request whose record the writer is
// through with; the caller holds mu.
func (b *Budgets) writtenLocked(ticket uint64) {
	d, ok := b.leases.draws[ticket]
	if !ok {
		return
	}
	delete(b.leases.draws, ticket)
	b.freeDrawLocked(d)
}

func (b *Budgets) freeDrawLocked(d leaseDraw) {
	d.t.drawn -= d.pico
	d.t.held -= d.pico
	if d.t.retired && d.t.drawn <= 0 {
		delete(b.leases.byTicket, d.t.ticket)
	}
}

// maintainLeases gives back the headroom of leases idle for leaseIdle,
// ending those nothing is drawn from, and renews the rows of the others
// before they expire. One call a second serves every lease.
func (b *Budgets) maintainLeases(ctx context.Context) error {
	lr := b.leaser()
	if lr == nil {
		return nil
	}
	now := b.now()
	type shrink struct {
		ticket uint64
		pico   int64
	}
	var shrinks []shrink
	var renew []*leaseTicket
	var renewTickets []uint64
	var latest time.Time
	b.mu.Lock()
	L := &b.leases
	for key, l := range L.m {
		if l.topping || len(l.pending) > 0 {
			continue
		}
		c := l.cur
		if now.Sub(l.lastDraw) >= leaseIdle {
			if c.drawn <= 0 {
				delete(L.m, key)
				delete(L.byTicket, c.ticket)
				shrinks = append(shrinks, shrink{c.ticket, -1})
				continue
			}
			if c.held > c.drawn {
				// Given back before the call: a top-up meanwhile sees no
				// residual, and the rows count the more until it lands.
				shrinks = append(shrinks, shrink{c.ticket, c.held - c.drawn})
				c.held = c.drawn
			}
		}
		if c.held > 0 && c.expires.Sub(now) < leaseRowsLife-leaseRenew {
			renew = append(renew, c)
			renewTickets = append(renewTickets, c.ticket)
			latest = now.Add(leaseRowsLife)
		}
	}
	if now.Sub(L.lastPrune) >= sweepEvery {
		L.lastPrune = now
		for t, d := range L.draws {
			if now.Sub(d.at) >= maxLocalAge {
				// Its record was dropped: the rows count it until the
				// lease ends.
				delete(L.draws, t)
				b.freeDrawLocked(d)
			}
		}
	}
	b.mu.Unlock()
	var errs []error
	for _, s := range shrinks {
		errs = append(errs, lr.ShrinkLease(ctx, s.ticket, s.pico))
	}
	if len(renew) > 0 {
		// The rows' new expiry counts from before the call, and is
		// believed only once the call succeeded: a failed renewal must not
		// let a lease be drawn from past its rows' life.
		if err := lr.RenewLeases(ctx, renewTickets, now, latest); err != nil {
			errs = append(errs, err)
		} else {
			b.mu.Lock()
			for _, c := range renew {
				if latest.After(c.expires) {
					c.expires = latest
				}
			}
			b.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}
