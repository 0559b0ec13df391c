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
// for leaseIdle is given back; the rows of an instance that dies stop
// counting when they expire, as reservations do.

// leaseWindow is how much of its recent spending rate a lease asks for
// beyond the requests waiting.
const leaseWindow = 250 * time.Millisecond

// leaseIdle is how long a lease no request drew from keeps its unused
// headroom.
const leaseIdle = 1500 * time.Millisecond

// leaseSlack is how far past the longest request lease drawn a lease's
// rows are kept alive; a renewal moves them on when half of it is left.
const leaseSlack = 30 * time.Second

// leaseTicket is one lease's rows as this instance knows them.
type leaseTicket struct {
	ticket uint64
	held   int64 // pico in each of its rows
	drawn  int64 // estimates of requests whose records are not written
	// expires: the rows stop counting then unless renewed.
	expires time.Time
	retired bool // replaced by a new ticket; ends when nothing is drawn
}

// budgetLease is the lease on one set of budgets.
type budgetLease struct {
	key     string
	holds   []ledger.BudgetHold
	cur     *leaseTicket
	dur     time.Duration // the longest request lease drawn
	pending []*leaseWaiter
	topping bool // a top-up is in flight: requests queue behind it
	// lastDraw, and the spending rate (pico/s) measured from rateStart.
	lastDraw  time.Time
	rateStart time.Time
	ratePico  int64
	rate      float64
}

type leaseWaiter struct {
	pico  int64
	lease time.Duration
	done  chan leaseResult
	sent  bool
}

type leaseResult struct {
	t       *leaseTicket
	refused int
	used    int64
	err     error
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
// lives long enough, with no top-up in flight; the caller holds mu.
func (b *Budgets) drawLocked(key string, ticket uint64, pico int64, now time.Time, lease time.Duration) *leaseTicket {
	l := b.leases.m[key]
	if l == nil || l.topping || len(l.pending) > 0 {
		return nil
	}
	c := l.cur
	if c.held-c.drawn < pico || now.Add(lease).After(c.expires) {
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
// next top-up of the lease, and waits for it.
func (b *Budgets) admitLease(ctx context.Context, lr ledger.LeaseReserver, key string, list []budget, ticket uint64, pico int64, now time.Time, lease time.Duration) (*leaseTicket, int, int64, error) {
	w := &leaseWaiter{pico: pico, lease: lease, done: make(chan leaseResult, 1)}
	b.mu.Lock()
	L := &b.leases
	l := L.m[key]
	if l == nil {
		if L.m == nil {
			L.m, L.byTicket = map[string]*budgetLease{}, map[uint64]*leaseTicket{}
		}
		l = &budgetLease{key: key, holds: holdsOf(list), rateStart: now}
		l.cur = &leaseTicket{ticket: b.tickets.Add(1)}
		L.m[key] = l
		L.byTicket[l.cur.ticket] = l.cur
	}
	// Another request may have topped the lease up meanwhile.
	if !l.topping && len(l.pending) == 0 {
		if c := b.drawLocked(key, ticket, pico, now, lease); c != nil {
			b.mu.Unlock()
			return c, 0, 0, nil
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
			return nil, 0, 0, ctx.Err()
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
		b.leases.draws[ticket] = leaseDraw{t: res.t, pico: pico, at: now}
		b.mu.Unlock()
	}
	return res.t, res.refused, res.used, res.err
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
		ests := make([]int64, len(batch))
		dur := l.dur
		for i, w := range batch {
			w.sent = true
			ests[i] = w.pico
			dur = max(dur, w.lease)
		}
		if el := now.Sub(l.rateStart); el >= 20*time.Millisecond {
			l.rate = (l.rate + float64(l.ratePico)/el.Seconds()) / 2
			l.rateStart, l.ratePico = now, 0
		}
		want := int64(l.rate * leaseWindow.Seconds())
		residual := c.held - c.drawn
		expires := now.Add(dur + leaseSlack)
		if c.expires.After(expires) {
			expires = c.expires
		}
		b.mu.Unlock()

		b.LeaseTopUps.Add(1)
		ctx, cancel := context.WithTimeout(context.Background(), sharedReserveTimeout)
		admitted, refused, used, grown, err := lr.TopUpLease(ctx, l.holds, c.ticket, ests, residual, want, now, expires)
		if err != nil && ctx.Err() != nil {
			err = context.DeadlineExceeded
		}
		cancel()

		b.mu.Lock()
		if err != nil {
			// The rows may or may not have grown: the ticket is trusted
			// no more (its rows expire; a drawn-out one is deleted).
			admitted = 0
			if l.cur == c {
				b.renewTicketLocked(l)
			}
		} else {
			c.held += grown
			c.expires = expires
			l.dur = dur
		}
		for i, w := range batch {
			if i < admitted {
				c.drawn += w.pico
				l.lastDraw = now
				l.ratePico += w.pico
				w.done <- leaseResult{t: c}
			} else {
				w.done <- leaseResult{refused: refused, used: used, err: err}
			}
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
	l.cur = &leaseTicket{ticket: b.tickets.Add(1)}
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
		if c.held > 0 && c.expires.Sub(now) < l.dur+leaseSlack/2 {
			renew = append(renew, c)
			renewTickets = append(renewTickets, c.ticket)
			if e := now.Add(l.dur + leaseSlack); e.After(latest) {
				latest = e
			}
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
