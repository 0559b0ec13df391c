package policy

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
)

// batchTable is a shared reservation store in memory with the semantics
// of the PostgreSQL one: a ticket is admitted while spend plus
// reservations is below the limit. It counts its round trips.
type batchTable struct {
	mu       sync.Mutex
	reserved int64
	calls    atomic.Int64
	largest  atomic.Int64
}

func (s *batchTable) CurrentSpend(context.Context, time.Time, []string) ([]ledger.Spend, error) {
	return nil, nil
}
func (s *batchTable) SharesReservations() bool { return true }
func (s *batchTable) SweepReservations(context.Context, time.Time) error {
	return nil
}
func (s *batchTable) Reserve(ctx context.Context, holds []ledger.BudgetHold, ticket uint64, pico int64, now, expires time.Time) (int, int64, error) {
	n, refused, used, err := s.ReserveMany(ctx, holds, []ledger.BudgetTicket{{Ticket: ticket, Pico: pico, Expires: expires}}, now)
	if n == 1 {
		return 0, 0, err
	}
	return refused, used, err
}
func (s *batchTable) ReserveMany(_ context.Context, holds []ledger.BudgetHold, tickets []ledger.BudgetTicket, _ time.Time) (int, int, int64, error) {
	s.calls.Add(1)
	if int64(len(tickets)) > s.largest.Load() {
		s.largest.Store(int64(len(tickets)))
	}
	// A round trip's worth of time, so that requests queue behind it.
	time.Sleep(2 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	for j, t := range tickets {
		if s.reserved >= holds[0].LimitPico {
			return j, 1, s.reserved, nil
		}
		s.reserved += t.Pico
	}
	return len(tickets), 0, 0, nil
}

// Concurrent requests on one budget share reservation round trips, and
// the batches admit what one request after another would: a $5 budget,
// $1 estimates, 64 concurrent requests → 5 admitted, in fewer round trips
// than requests.
func TestBudgetReservationsBatchConcurrentRequests(t *testing.T) {
	table := &batchTable{}
	b := NewBudgets(func() ledger.SpendStore { return table }, nil)
	five := int64(500)
	id := &Identity{KeyID: "alice", Limits: ledger.Limits{BudgetCents: &five, BudgetPeriod: "monthly"}}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, refusal := b.Admit(context.Background(), id, ledger.Limits{}, "", 1e12, time.Minute)
			if refusal == nil && r != nil {
				admitted.Add(1)
			} else if refusal != nil && refusal.Status != 429 && refusal.Status != 402 && refusal.Status != 403 {
				t.Errorf("refusal %d %s", refusal.Status, refusal.Message)
			}
		}()
	}
	wg.Wait()
	if got := admitted.Load(); got != 5 {
		t.Errorf("admitted %d of 64 $1 requests on a $5 budget, want 5", got)
	}
	if calls := table.calls.Load(); calls >= 64 || table.largest.Load() < 2 {
		t.Errorf("%d round trips, largest batch %d: the requests were not batched", calls, table.largest.Load())
	}
	b.batches.mu.Lock()
	left := len(b.batches.m)
	b.batches.mu.Unlock()
	if left != 0 {
		t.Errorf("%d queues left after every request was answered", left)
	}
}

// Two instances on one PostgreSQL ledger, each batching its own
// requests, admit together what one instance would: a $5 budget, $1
// estimates, 2×40 concurrent requests → 5.
func TestBudgetBatchesOfTwoInstancesAdmitAsOne(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	var instances [2]*Budgets
	for i := range instances {
		s, err := ledger.OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		instances[i] = NewBudgets(func() ledger.SpendStore { return s.(ledger.SpendStore) }, nil)
	}
	five := int64(500)
	id := &Identity{KeyID: "alice", Limits: ledger.Limits{BudgetCents: &five, BudgetPeriod: "monthly"}}
	var admitted, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, refusal := instances[i%2].Admit(context.Background(), id, ledger.Limits{}, "", 1e12, time.Minute)
			switch {
			case refusal == nil && r != nil:
				admitted.Add(1)
			case refusal != nil && refusal.Status == 503:
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d reservations failed", failed.Load())
	}
	if got := admitted.Load(); got != 5 {
		t.Errorf("admitted %d of 80 $1 requests on a $5 budget over two instances, want 5", got)
	}
	for i, b := range instances {
		if n := b.SharedFailures.Load(); n != 0 {
			t.Errorf("instance %d counted %d requests alone", i, n)
		}
	}
}

// gatedTable admits every ticket, but each batch waits for a signal, and
// it records the tickets it was given.
type gatedTable struct {
	batchTable
	gate    chan struct{}
	entered chan struct{}
	seenMu  sync.Mutex
	seen    []uint64
}

func (s *gatedTable) ReserveMany(ctx context.Context, holds []ledger.BudgetHold, tickets []ledger.BudgetTicket, now time.Time) (int, int, int64, error) {
	s.seenMu.Lock()
	for _, t := range tickets {
		s.seen = append(s.seen, t.Ticket)
	}
	s.seenMu.Unlock()
	s.entered <- struct{}{}
	<-s.gate
	return len(tickets), 0, 0, nil
}

// TestQueuedReservationLeavesWithItsClient: a request queued behind a
// slow batch whose client leaves is answered at once (499), and its
// ticket is never reserved; the request already in the batch is admitted
// when the batch answers.
func TestQueuedReservationLeavesWithItsClient(t *testing.T) {
	table := &gatedTable{gate: make(chan struct{}), entered: make(chan struct{}, 4)}
	b := NewBudgets(func() ledger.SpendStore { return table }, nil)
	five := int64(500)
	id := &Identity{KeyID: "alice", Limits: ledger.Limits{BudgetCents: &five, BudgetPeriod: "monthly"}}
	first := make(chan *Reservation, 1)
	go func() {
		r, refusal := b.Admit(context.Background(), id, ledger.Limits{}, "", 1e12, time.Minute)
		if refusal != nil {
			t.Errorf("the first request was refused: %d %s", refusal.Status, refusal.Message)
		}
		first <- r
	}()
	<-table.entered // the first request's batch is in flight and held
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	r, refusal := b.Admit(ctx, id, ledger.Limits{}, "", 1e12, time.Minute)
	if r != nil || refusal == nil {
		t.Fatalf("a request whose wait ran out was admitted (%v)", r)
	}
	if waited := time.Since(began); waited > 2*time.Second {
		t.Errorf("the queued request waited %v for a batch it was not in", waited)
	}
	if refusal.Status != 503 && refusal.Status != 499 {
		t.Errorf("queued request answered %d %s", refusal.Status, refusal.Message)
	}
	close(table.gate)
	if got := <-first; got == nil {
		t.Fatal("the request in the batch was not admitted")
	}
	table.seenMu.Lock()
	defer table.seenMu.Unlock()
	if len(table.seen) != 1 {
		t.Errorf("tickets sent to the database: %v; the departed request's ticket must not be among them", table.seen)
	}
}
