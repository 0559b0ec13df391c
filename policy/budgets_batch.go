package policy

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Admissions on one budget queue on its lock in the database: with every
// request reserving for itself, a busy key's requests ran one
// transaction after another, and its throughput was one over a round
// trip. Requests on the same budgets that arrive while a reservation is
// in flight wait for it and then go together: one transaction admits them
// in order as the same calls one after another would (ledger
// BatchReserver), so every guarantee of per-request reservations holds:
// each admitted request has its own reservation, ended by its own record,
// and what N instances admit is what one would.

// maxReserveBatch bounds one batch, so one transaction's locks are not
// held for long.
const maxReserveBatch = 256

// reserveQueues are the batches waiting per set of budgets; the zero
// value is ready.
type reserveQueues struct {
	mu sync.Mutex
	m  map[string]*reserveQueue
}

type reserveQueue struct {
	holds   []ledger.BudgetHold
	pending []*reserveWaiter
}

type reserveWaiter struct {
	t    ledger.BudgetTicket
	done chan reserveResult
	// sent: the drainer took the waiter into a batch (under the queues'
	// lock), so its ticket may be reserved whatever its caller does now.
	sent bool
}

type reserveResult struct {
	refused int
	used    int64
	err     error
}

// holdsKey names a set of budgets (and their limits: a limit changed by
// an admin starts a queue of its own).
func holdsKey(holds []ledger.BudgetHold) string {
	var b strings.Builder
	for _, h := range holds {
		b.WriteString(h.Scope)
		b.WriteByte(0)
		b.WriteString(h.ScopeID)
		b.WriteByte(0)
		b.WriteString(h.Period)
		b.WriteByte(0)
		b.WriteString(strconv.FormatInt(h.PeriodStart.UnixMicro(), 10))
		b.WriteByte(0)
		b.WriteString(strconv.FormatInt(h.LimitPico, 10))
		b.WriteByte(1)
	}
	return b.String()
}

// reserveShared reserves pico against holds under ticket in the shared
// store, batched with the other requests on the same budgets when the
// store can. ctx bounds the wait of a request alone; a batch has its own
// bound (sharedReserveTimeout), since it serves requests other than the
// one that started it.
func (b *Budgets) reserveShared(ctx context.Context, rs ledger.BudgetReserver, holds []ledger.BudgetHold, ticket uint64, pico int64, now, expires time.Time) (int, int64, error) {
	br, ok := rs.(ledger.BatchReserver)
	if !ok {
		return rs.Reserve(ctx, holds, ticket, pico, now, expires)
	}
	w := &reserveWaiter{t: ledger.BudgetTicket{Ticket: ticket, Pico: pico, Expires: expires}, done: make(chan reserveResult, 1)}
	key := holdsKey(holds)
	qs := &b.batches
	qs.mu.Lock()
	q := qs.m[key]
	if q == nil {
		if qs.m == nil {
			qs.m = map[string]*reserveQueue{}
		}
		q = &reserveQueue{holds: holds}
		qs.m[key] = q
		// The first request starts the queue's drainer; it ends when the
		// queue is empty.
		go b.drainReservations(br, key, q)
	}
	q.pending = append(q.pending, w)
	qs.mu.Unlock()
	select {
	case res := <-w.done:
		return res.refused, res.used, res.err
	case <-ctx.Done():
	}
	// The caller left or its wait ran out. A ticket still queued leaves
	// the queue, reserved nowhere. One already in a batch waits for that
	// batch (bounded by sharedReserveTimeout): if it was admitted, the
	// caller must hold it, so that the request's record ends it, rather
	// than leave it counting against the budget until it expires.
	qs.mu.Lock()
	if !w.sent {
		q.pending = slices.DeleteFunc(q.pending, func(p *reserveWaiter) bool { return p == w })
		qs.mu.Unlock()
		return 0, 0, ctx.Err()
	}
	qs.mu.Unlock()
	res := <-w.done
	return res.refused, res.used, res.err
}

// drainReservations reserves q's waiting requests a batch at a time until
// none is left.
func (b *Budgets) drainReservations(br ledger.BatchReserver, key string, q *reserveQueue) {
	qs := &b.batches
	for {
		qs.mu.Lock()
		batch := q.pending
		if len(batch) > maxReserveBatch {
			batch = batch[:maxReserveBatch]
		}
		q.pending = q.pending[len(batch):]
		for _, w := range batch {
			w.sent = true
		}
		if len(batch) == 0 {
			delete(qs.m, key)
			qs.mu.Unlock()
			return
		}
		qs.mu.Unlock()
		tickets := make([]ledger.BudgetTicket, len(batch))
		for i, w := range batch {
			tickets[i] = w.t
		}
		ctx, cancel := context.WithTimeout(context.Background(), sharedReserveTimeout)
		admitted, refused, used, err := br.ReserveMany(ctx, q.holds, tickets, b.now())
		if err != nil && ctx.Err() != nil {
			// Admit tells a slow database from a failing one by this.
			err = context.DeadlineExceeded
		}
		cancel()
		for i, w := range batch {
			if err == nil && i < admitted {
				w.done <- reserveResult{}
			} else {
				w.done <- reserveResult{refused: refused, used: used, err: err}
			}
		}
	}
}
