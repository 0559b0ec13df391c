package batch

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// The worker's clock. An item's lease outlives several renewals, so a
// slow database costs no item; an instance that stopped without
// releasing its items (a crash) leaves them to another after leaseFor.
const (
	leaseFor    = time.Minute
	renewEvery  = 15 * time.Second
	pollEvery   = time.Second
	sweepEvery  = 2 * time.Second
	purgeEvery  = time.Hour
	storeBudget = 10 * time.Second // one store call's bound
	// waitDefault and waitMost bound how long an item the key's limits
	// refused waits before its next try, when the refusal names none.
	waitDefault = 5 * time.Second
	waitMost    = time.Minute
)

// Start begins the worker: it claims items under a lease, runs them, ends
// expired and finished batches and purges old ones, until Close.
func (s *Service) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.done.Add(1)
	go s.loop(ctx)
}

// Close stops the worker and puts the items it was running back, so
// another instance (or this one restarted) runs them at once.
func (s *Service) Close() {
	if s.stop != nil {
		s.stop()
		s.done.Wait()
	}
}

// poke wakes the worker: a batch was created or cancelled here.
func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

type running struct {
	mu  sync.Mutex
	ids map[string]struct{}
}

func (s *Service) loop(ctx context.Context) {
	defer s.done.Done()
	held := &running{ids: map[string]struct{}{}}
	var items sync.WaitGroup
	defer items.Wait()
	slots := make(chan struct{}, s.o.Workers)
	poll := time.NewTicker(pollEvery)
	defer poll.Stop()
	var lastSweep, lastRenew, lastPurge, lastCheck time.Time
	var checking atomic.Bool
	for {
		now := s.o.Now()
		if st := s.o.Store(); st != nil {
			if now.Sub(lastCheck) >= s.o.CheckEvery && checking.CompareAndSwap(false, true) {
				// Apart from the loop: a provider's answers must not hold
				// up the items this instance runs.
				restore := lastCheck.IsZero()
				lastCheck = now
				items.Add(1)
				go func() {
					defer items.Done()
					defer checking.Store(false)
					s.checkPassthroughs(ctx, st, restore)
				}()
			}
			if now.Sub(lastPurge) >= purgeEvery {
				lastPurge = now
				s.purge(ctx, st, now)
			}
			if now.Sub(lastRenew) >= renewEvery {
				lastRenew = now
				s.renew(ctx, st, held, now)
			}
			if now.Sub(lastSweep) >= sweepEvery {
				lastSweep = now
				s.sweep(ctx, st)
			}
			s.claim(ctx, st, held, slots, &items)
		}
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-s.wake:
			lastSweep = time.Time{}
		}
	}
}

// claim fills the free slots with runnable items.
func (s *Service) claim(ctx context.Context, st ledger.BatchStore, held *running, slots chan struct{}, items *sync.WaitGroup) {
	free := cap(slots) - len(slots)
	if free == 0 {
		return
	}
	now := s.o.Now()
	cctx, cancel := context.WithTimeout(ctx, storeBudget)
	claimed, err := st.ClaimBatchItems(cctx, s.o.Site, s.owner, now, now.Add(leaseFor), free)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.o.Failed("claiming batch items", err)
		}
		return
	}
	for _, it := range claimed {
		slots <- struct{}{}
		held.mu.Lock()
		held.ids[it.ID] = struct{}{}
		held.mu.Unlock()
		items.Add(1)
		go func() {
			defer items.Done()
			defer func() { <-slots }()
			s.runItem(ctx, st, it)
			held.mu.Lock()
			delete(held.ids, it.ID)
			held.mu.Unlock()
			s.poke()
		}()
	}
}

func (s *Service) renew(ctx context.Context, st ledger.BatchStore, held *running, now time.Time) {
	held.mu.Lock()
	ids := make([]string, 0, len(held.ids))
	for id := range held.ids {
		ids = append(ids, id)
	}
	held.mu.Unlock()
	if len(ids) == 0 {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, storeBudget)
	defer cancel()
	if err := st.RenewBatchItems(cctx, s.owner, ids, now.Add(leaseFor)); err != nil && ctx.Err() == nil {
		s.o.Failed("renewing batch item leases", err)
	}
}

// runItem serves one claimed item and stores its end, or puts it back
// when the key's limits refused it for now or the worker is stopping.
func (s *Service) runItem(ctx context.Context, st ledger.BatchStore, it ledger.BatchItem) {
	now := s.o.Now()
	end := ledger.BatchItem{ID: it.ID}
	switch {
	case !it.Cancelled.IsZero():
		end.State = ledger.ItemCanceled
	case !now.Before(it.Expires):
		end.State = ledger.ItemExpired
	default:
		ans, retry := s.serve(ctx, it)
		if ctx.Err() != nil {
			// Stopping: the answer, if any, is lost with the request's
			// context; the item runs again on the next instance.
			s.release(st, it.ID, now)
			return
		}
		if retry && s.o.Now().Add(ans.RetryAfter).Before(it.Expires) {
			s.release(st, it.ID, s.o.Now().Add(ans.RetryAfter))
			return
		}
		ans = storable(ans, it.Endpoint)
		end.StatusCode, end.Result = ans.Status, ans.Body
		end.State = ledger.ItemErrored
		if ans.Status >= 200 && ans.Status < 300 {
			end.State = ledger.ItemSucceeded
		}
	}
	cctx, cancel := context.WithTimeout(context.Background(), storeBudget)
	defer cancel()
	if err := st.FinishBatchItem(cctx, s.owner, end); err != nil {
		// The lease lapses and another run answers the item again.
		s.o.Failed("storing a batch item's answer", err)
	}
}

// serve runs it as the key stands now; retry says a later try may pass.
func (s *Service) serve(ctx context.Context, it ledger.BatchItem) (Answer, bool) {
	id, refusal := s.identify(it.KeyID)
	if refusal != nil {
		return Answer{Status: refusal.Status, Body: refusal.Body(familyOf(it.Endpoint))}, false
	}
	ans := s.o.Runner.RunItem(ctx, id, it.Endpoint, it.Body)
	if ans.Final {
		return ans, false
	}
	switch ans.Status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		// Rate limits, max_parallel, a full gateway: a batch yields to
		// interactive traffic and waits its turn rather than failing.
		if ans.RetryAfter <= 0 {
			ans.RetryAfter = waitDefault
		}
		ans.RetryAfter = min(ans.RetryAfter, waitMost)
		return ans, true
	}
	return ans, false
}

func (s *Service) identify(keyID string) (*policy.Identity, *apierror.Error) {
	if s.o.Identify == nil {
		return nil, nil
	}
	return s.o.Identify(keyID)
}

func (s *Service) release(st ledger.BatchStore, id string, at time.Time) {
	cctx, cancel := context.WithTimeout(context.Background(), storeBudget)
	defer cancel()
	if err := st.ReleaseBatchItem(cctx, s.owner, id, at); err != nil {
		s.o.Failed("putting a batch item back", err)
	}
}

// sweep ends expired items and every batch with nothing left to run,
// writing its result files.
func (s *Service) sweep(ctx context.Context, st ledger.BatchStore) {
	cctx, cancel := context.WithTimeout(ctx, storeBudget)
	defer cancel()
	done, err := st.ExpireBatches(cctx, s.o.Now())
	if err != nil {
		if ctx.Err() == nil {
			s.o.Failed("ending batches", err)
		}
		return
	}
	for _, b := range done {
		items, err := st.BatchItems(cctx, b.ID)
		if err != nil {
			s.o.Failed("reading a batch's answers", err)
			continue
		}
		now := s.o.Now()
		if _, err := st.EndBatch(cctx, b.ID, now, s.resultFiles(b, items, now)); err != nil {
			s.o.Failed("ending a batch", err)
		}
	}
}

func (s *Service) purge(ctx context.Context, st ledger.BatchStore, now time.Time) {
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := st.PurgeBatches(cctx, now.Add(-s.o.Retention), now); err != nil && ctx.Err() == nil {
		s.o.Failed("purging batches past retention", err)
	}
}

// resultFiles are what an ended batch leaves: Anthropic's results, or
// OpenAI's output and error files (each only when it has a line).
func (s *Service) resultFiles(b ledger.Batch, items []ledger.BatchItem, now time.Time) []ledger.BatchFile {
	f := func(id, purpose, name string, content []byte) ledger.BatchFile {
		return ledger.BatchFile{ID: id, Site: b.Site, KeyID: b.KeyID, Purpose: purpose, Filename: name,
			Created: now, Expires: now.Add(s.o.Retention), Content: content, Bytes: int64(len(content))}
	}
	if b.API == apiAnthropic {
		return []ledger.BatchFile{f(b.OutputFileID, purposeResults, b.ID+"_results.jsonl", anthropicResults(items))}
	}
	out, errs := openAIResults(items)
	var files []ledger.BatchFile
	if len(out) > 0 {
		files = append(files, f(b.OutputFileID, "batch_output", b.ID+"_output.jsonl", out))
	}
	if len(errs) > 0 {
		files = append(files, f(b.ErrorFileID, "batch_output", b.ID+"_error.jsonl", errs))
	}
	return files
}

// storable is an answer as the database keeps it: a body of text
// without NUL. One that is not (an upstream's binary body relayed as it
// was) becomes a 502 naming the status it had.
func storable(ans Answer, endpoint string) Answer {
	if utf8.Valid(ans.Body) && bytes.IndexByte(ans.Body, 0) < 0 {
		return ans
	}
	e := &apierror.Error{Status: http.StatusBadGateway, Message: "the answer (status " + itoa(ans.Status) + ") was not text and is not kept"}
	return Answer{Status: e.Status, Body: e.Body(familyOf(endpoint))}
}
