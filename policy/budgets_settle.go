package policy

import (
	"context"
	"time"
)

// OutputBound is the output bound per choice the request must be sent
// with when its worst case did not fit in its budgets (or past what one
// request may cost, ledger.MaxCost) and the bound was lowered to what the
// reservation pays for; ok is false when the request runs as its client
// asked.
func (r *Reservation) OutputBound() (tokens int64, ok bool) {
	if r == nil {
		return 0, false
	}
	if n := r.est.tokensFor(r.pico); n < r.est.Tokens {
		return n, true
	}
	return 0, false
}

// Ticket numbers the reservation; the request's ledger record carries it,
// so that the writer's report of the record ends the local count.
func (r *Reservation) Ticket() uint64 {
	if r == nil {
		return 0
	}
	return r.ticket
}

// Lease is the budget lease the request's estimate was drawn from, and
// what the lease holds for the request (its estimate, or its cost once
// settled); the request's record carries them, so that its insert takes
// that off the lease. 0: none. Read it again after Settle.
func (r *Reservation) Lease() (uint64, int64) {
	if r == nil || r.lease == nil {
		return 0, 0
	}
	return r.lease.ticket, r.leasePico
}

// giveBackTimeout bounds the return of a settled request's unused
// estimate to a lease's rows near the limit.
const giveBackTimeout = time.Second

// Settle replaces the reservation with the request's real cost, at once:
// the estimate stops counting here, and on a lease the request's draw
// shrinks to its cost, so that the next request finds the difference
// (near the limit, where a lease holds no spare headroom, it is given
// back to the database before Settle returns, so other instances find it
// too). Called once the answer is complete and before its record is
// queued; called again, with the cost the record ended with, it corrects
// the cost counted here (the lease keeps what it holds: the record
// carries that).
func (r *Reservation) Settle(costPico int64) {
	if r == nil {
		return
	}
	b := r.b
	b.mu.Lock()
	costPico = max(costPico, 0)
	if r.done {
		var settled int64
		if r.local != nil {
			settled = r.local.pico
		}
		if delta := costPico - settled; delta != 0 {
			b.countCostLocked(r, delta)
		}
		b.mu.Unlock()
		return
	}
	r.done = true
	for _, k := range r.keys {
		if b.reserved[k] -= r.pico; b.reserved[k] <= 0 {
			delete(b.reserved, k)
		}
	}
	var giveBack int64
	var lt uint64
	if r.lease != nil {
		giveBack, lt = b.settleDrawLocked(r, costPico)
	}
	b.countCostLocked(r, costPico)
	b.mu.Unlock()
	if giveBack > 0 {
		if lr := b.leaser(); lr != nil {
			ctx, cancel := context.WithTimeout(context.Background(), giveBackTimeout)
			// A failed give-back leaves the rows holding more than this
			// instance knows: they count the more until the lease ends.
			_ = lr.ShrinkLease(ctx, lt, giveBack)
			cancel()
		}
	}
}

// settleDrawLocked shrinks r's draw on its lease to cost, and returns
// what to give back to the lease's rows now (and its ticket): the unused
// estimate, when the lease holds no spare headroom and no top-up is in
// flight (a top-up counts the residual it read as this instance's). The
// caller holds mu.
func (b *Budgets) settleDrawLocked(r *Reservation, cost int64) (int64, uint64) {
	d, ok := b.leases.draws[r.ticket]
	if !ok || cost >= d.pico {
		return 0, 0
	}
	unused := d.pico - cost
	d.t.drawn -= unused
	d.pico = cost
	b.leases.draws[r.ticket] = d
	r.leasePico = cost
	if d.t.retired {
		return 0, 0
	}
	l := d.t.lease
	if l == nil || !l.tight || l.topping || len(l.pending) > 0 {
		return 0, 0
	}
	// Given back before the call, as an idle lease's headroom is.
	d.t.held -= unused
	return unused, d.t.ticket
}

// countCostLocked counts delta more of r's cost here until its record is
// written, and alerts on the thresholds its budgets reached; the caller
// holds mu.
func (b *Budgets) countCostLocked(r *Reservation, delta int64) {
	if l := r.local; l != nil && l.written.IsZero() {
		b.addLocal(l, -1)
		l.pico += delta
		b.addLocal(l, 1)
	} else if l == nil && delta > 0 {
		written, done := b.early[r.ticket]
		delete(b.early, r.ticket)
		l := &localSpend{keys: r.keys, pico: delta, at: b.now(), ticket: r.ticket, written: written}
		r.local = l
		b.local = append(b.local, l)
		b.addLocal(l, 1)
		if !done {
			b.unwritten[r.ticket] = l
		}
	}
	if b.Alert == nil || delta <= 0 {
		return
	}
	now := b.now()
	for _, bg := range r.budgets {
		b.checkLocked(b.watchLocked(bg, now), b.usedLocked(bg.key)-b.reserved[bg.key])
	}
}
