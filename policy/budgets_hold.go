package policy

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
)

// A batch passed through to a provider's batch API spends over up to a
// day after it was admitted, on another instance perhaps, after
// restarts: its worst case is held as one reservation under a ticket the
// batch keeps in the ledger, not as a request's reservation of this
// process. On a store that shares reservations (PostgreSQL) the hold is
// a reservation row that lives until expires or until the settlement's
// record ends it; on one that does not (SQLite, one process) it is
// counted here, and counted again after a restart (RestoreBatchHold).

// batchHold is a hold this process counts itself.
type batchHold struct {
	keys []budgetKey
	pico int64
}

// HoldBatch reserves pico against every budget that applies to id until
// expires under ticket, or refuses as a request over its budget is
// refused. A caller with no budget, or a batch that costs nothing, holds
// nothing (shared false, no refusal).
func (b *Budgets) HoldBatch(ctx context.Context, id *Identity, ws ledger.Limits, ticket uint64, pico int64, expires time.Time) *apierror.Error {
	if b == nil || id == nil || pico <= 0 {
		return nil
	}
	now := b.now()
	list := b.applicable(id, ws, "", now)
	if len(list) == 0 {
		return nil
	}
	slices.SortFunc(list, func(a, c budget) int { return compareBudgetKeys(a.key, c.key) })
	if rs := b.reserver(); rs != nil {
		rctx, cancel := context.WithTimeout(ctx, sharedReserveTimeout)
		refused, used, err := rs.Reserve(rctx, holdsOf(list), ticket, pico, now, expires)
		cancel()
		switch {
		case err != nil:
			b.SharedFailures.Add(1)
			return &apierror.Error{Status: http.StatusServiceUnavailable, RetryAfter: "5", Code: "budget_check_unavailable",
				Message: "the budgets this batch is charged to could not be checked (the ledger database is slow or refused the reservation); retry"}
		case refused > 0 && refused <= len(list):
			bg := list[refused-1]
			b.mu.Lock()
			defer b.mu.Unlock()
			spent, reserved := b.splitShared(bg.key, used, b.usedLocked(bg.key)-b.reserved[bg.key])
			return b.refuseLocked(bg, spent, reserved, pico, now)
		}
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, refusal := b.grantLocked(list, Estimate{InputPico: pico}, now); refusal != nil {
		return refusal
	}
	b.countHoldLocked(list, ticket, pico)
	return nil
}

// RestoreBatchHold counts again, after a restart, a hold this process
// keeps itself; a store that shares reservations kept it already.
func (b *Budgets) RestoreBatchHold(id *Identity, ws ledger.Limits, ticket uint64, pico int64) {
	if b == nil || id == nil || pico <= 0 || b.reserver() != nil {
		return
	}
	now := b.now()
	list := b.applicable(id, ws, "", now)
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, held := b.batchHolds[ticket]; !held {
		b.countHoldLocked(list, ticket, pico)
	}
}

func (b *Budgets) countHoldLocked(list []budget, ticket uint64, pico int64) {
	h := batchHold{pico: pico}
	for _, bg := range list {
		h.keys = append(h.keys, bg.key)
		b.reserved[bg.key] += pico
	}
	if b.batchHolds == nil {
		b.batchHolds = map[uint64]batchHold{}
	}
	b.batchHolds[ticket] = h
}

// ReleaseBatchHold ends the hold of ticket once its batch settled: the
// settlement's records are in the database, so the spend is read from
// there first and the hold ends after, never leaving the batch counted
// nowhere. Shared holds end with the settlement's transaction.
func (b *Budgets) ReleaseBatchHold(ctx context.Context, ticket uint64) {
	if b == nil {
		return
	}
	_ = b.Refresh(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.batchHolds[ticket]
	if !ok {
		return
	}
	delete(b.batchHolds, ticket)
	for _, k := range h.keys {
		if b.reserved[k] -= h.pico; b.reserved[k] <= 0 {
			delete(b.reserved, k)
		}
	}
}
