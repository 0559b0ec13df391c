package ledger

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A batch admits what the same reservations one after another would: a
// $5 budget with $1.50 already reserved, $1 tickets → the first three
// (2.5, 3.5, 4.5 are at most 5 with each ticket's own $1 counted), the
// fourth and later refused with the first budget's use; each admitted
// ticket has its own reservation.
func TestReserveManyAdmitsAsOneAfterAnother(t *testing.T) {
	a, _, _ := openPostgresPair(t)
	br := a.(BatchReserver)
	now := time.Now()
	holds := []BudgetHold{monthlyHold(ScopeKey, "alice", 5e12, now), monthlyHold(ScopeWorkspace, "w", 100e12, now)}
	if refused, _, err := a.Reserve(context.Background(), holds, 1, 1.5e12, now, now.Add(time.Minute)); err != nil || refused != 0 {
		t.Fatalf("first reservation: refused %d, %v", refused, err)
	}
	var tickets []BudgetTicket
	for i := range 7 {
		tickets = append(tickets, BudgetTicket{Ticket: uint64(10 + i), Pico: 1e12, Expires: now.Add(time.Minute)})
	}
	admitted, refused, used, err := br.ReserveMany(context.Background(), holds, tickets, now)
	if err != nil {
		t.Fatal(err)
	}
	if admitted != 3 || refused != 1 || used != 4.5e12 {
		t.Fatalf("admitted %d, refused %d, used %d; want 3, 1, 4.5e12", admitted, refused, used)
	}
	// The reservations are the admitted tickets', against both budgets.
	refusedNext, usedNext, err := a.Reserve(context.Background(), holds, 99, 1e12, now, now.Add(time.Minute))
	if err != nil || refusedNext != 1 || usedNext != 4.5e12 {
		t.Errorf("after the batch: refused %d, used %d, %v; want 1, 4.5e12", refusedNext, usedNext, err)
	}
	// A workspace budget that is spent refuses at its index.
	wsHolds := []BudgetHold{monthlyHold(ScopeKey, "bob", 100e12, now), monthlyHold(ScopeWorkspace, "w", 5e12, now)}
	if admitted, refused, _, err := br.ReserveMany(context.Background(), wsHolds, tickets[:1], now); err != nil || admitted != 0 || refused != 2 {
		t.Errorf("spent workspace: admitted %d, refused %d, %v; want 0, 2", admitted, refused, err)
	}
}

// Two instances batching concurrently on one budget admit what one
// would: a $5 budget, $1 tickets, 40 requests in batches of four over
// both → 5.
func TestReserveManyTwoInstancesAdmitAsOne(t *testing.T) {
	a, _, b := openPostgresPair(t)
	now := time.Now()
	holds := []BudgetHold{monthlyHold(ScopeKey, "alice", 5e12, now)}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rs := a.(BatchReserver)
			if i%2 == 1 {
				rs = b.(BatchReserver)
			}
			var tickets []BudgetTicket
			for j := range 4 {
				tickets = append(tickets, BudgetTicket{Ticket: uint64(1000 + 4*i + j), Pico: 1e12, Expires: now.Add(time.Minute)})
			}
			n, _, _, err := rs.ReserveMany(context.Background(), holds, tickets, now)
			if err != nil {
				t.Error(err)
				return
			}
			admitted.Add(int64(n))
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != 5 {
		t.Fatalf("admitted %d of 40 $1 reservations on a $5 budget over two instances, want 5", got)
	}
}
