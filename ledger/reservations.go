package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Budget reservations shared by every instance. A request's bounded cost
// estimate is reserved in the database, against every budget that applies
// to it, before its upstream call: instances on one PostgreSQL ledger then
// admit together what one instance would. The insert that writes the
// request's record deletes its reservation in the same transaction that
// adds its cost to budget_spend, so a cost is never counted twice nor
// missing between the two. A reservation whose record never comes (its
// instance crashed) stops counting when it expires.

// BudgetHold is one budget a reservation is made against.
type BudgetHold struct {
	Scope, ScopeID, Period string
	PeriodStart            time.Time
	LimitPico              int64
}

// ErrNotShared says the store keeps no shared reservations (SQLite serves
// one process, whose own memory holds them).
var ErrNotShared = errors.New("ledger: this store does not share budget reservations")

// BudgetReserver reserves budget room shared by every instance.
type BudgetReserver interface {
	// SharesReservations reports whether Reserve works on this store.
	SharesReservations() bool
	// Reserve locks holds in the order given (callers sort them, so that
	// no two admissions wait on each other), and, if every one has room
	// for pico (spend plus live reservations plus pico at most its limit),
	// reserves pico against each under ticket until expires. Otherwise it
	// reserves nothing and returns the 1-based index of the first hold
	// without room and what that hold has used.
	Reserve(ctx context.Context, holds []BudgetHold, ticket uint64, pico int64, now, expires time.Time) (refused int, usedPico int64, err error)
	// SweepReservations deletes reservations expired before now.
	SweepReservations(ctx context.Context, now time.Time) error
}

// BudgetTicket is one request's reservation in a batch.
type BudgetTicket struct {
	Ticket  uint64
	Pico    int64
	Expires time.Time
}

// BatchReserver reserves for many requests on the same budgets in one
// round trip.
type BatchReserver interface {
	BudgetReserver
	// ReserveMany does what Reserve called for each ticket in order would
	// do, in one transaction: the first admitted tickets reserve their
	// pico against every hold; at the first ticket a hold has no room for,
	// it stops, and that ticket and every later one are refused with
	// refused and usedPico as Reserve would give them (a later, smaller
	// ticket waits for the next batch rather than overtake it).
	ReserveMany(ctx context.Context, holds []BudgetHold, tickets []BudgetTicket, now time.Time) (admitted, refused int, usedPico int64, err error)
}

// reserveFunction is installed on PostgreSQL at open: one round trip per
// admission. Admissions on one budget queue on a transaction-scoped
// advisory lock named by the budget, not on its budget_spend row, so
// they never wait for the ledger writer's transaction (which holds that
// row until its batch commits); spend and reservations are then read in
// one statement, one snapshot: a writer that commits between two reads
// could otherwise show a cost neither as spend nor as reservation. The
// name carries a version so that instances of two releases can share a
// database during an upgrade; a new body gets a new name.
const reserveFunction = `CREATE OR REPLACE FUNCTION modelgate_reserve_v3(scopes text[], ids text[], periods text[], starts bigint[],
	limits bigint[], est bigint, tkt bigint, now_us bigint, expires_us bigint, OUT refused int, OUT used bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
	i int;
	n int := coalesce(array_length(scopes, 1), 0);
	u numeric;
BEGIN
	-- Reservations are worth nothing after a database crash (their
	-- requests' connections are gone with it): their commit need not
	-- wait for the disk.
	PERFORM set_config('synchronous_commit', 'off', true);
	refused := 0;
	used := 0;
	FOR i IN 1 .. n LOOP
		-- Callers pass budgets in one order, so two admissions never wait
		-- on each other's locks.
		PERFORM pg_advisory_xact_lock(hashtextextended('modelgate budget ' || scopes[i] || ' ' || ids[i] || ' ' || periods[i] || ' ' || starts[i], 0));
	END LOOP;
	FOR i IN 1 .. n LOOP
		SELECT coalesce((SELECT b.spent_pico FROM budget_spend b WHERE b.scope = scopes[i] AND b.scope_id = ids[i]
				AND b.period = periods[i] AND b.period_start_us = starts[i]), 0)
			+ coalesce((SELECT sum(r.pico) FROM budget_reservations r WHERE r.scope = scopes[i] AND r.scope_id = ids[i]
				AND r.period = periods[i] AND r.period_start_us = starts[i] AND r.expires_us > now_us), 0)
		INTO u;
		-- The request's own worst case counts: admitted only if it fits.
		IF u + greatest(est, 0) > limits[i] THEN
			refused := i;
			used := least(u, 9223372036854775807)::bigint;
			RETURN;
		END IF;
	END LOOP;
	IF est > 0 THEN
		FOR i IN 1 .. n LOOP
			INSERT INTO budget_reservations (scope, scope_id, period, period_start_us, ticket, pico, expires_us)
				VALUES (scopes[i], ids[i], periods[i], starts[i], tkt, est, expires_us) ON CONFLICT DO NOTHING;
		END LOOP;
	END IF;
END
$fn$`

// reserveManyFunction is modelgate_reserve_v3 for a batch of requests on
// the same budgets: the locks are taken once, spend and reservations read
// once, and each ticket is then admitted in order while every budget has
// room, its estimate added to what the next one sees, exactly as the
// same calls one after another would. One round trip and one lock
// acquisition serve every request that queued while the last batch ran.
const reserveManyFunction = `CREATE OR REPLACE FUNCTION modelgate_reserve_many_v2(scopes text[], ids text[], periods text[], starts bigint[],
	limits bigint[], ests bigint[], tkts bigint[], now_us bigint, expires_us bigint[], OUT admitted int, OUT refused int, OUT used bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
	i int;
	j int;
	n int := coalesce(array_length(scopes, 1), 0);
	m int := coalesce(array_length(tkts, 1), 0);
	u numeric[];
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	admitted := 0;
	refused := 0;
	used := 0;
	FOR i IN 1 .. n LOOP
		PERFORM pg_advisory_xact_lock(hashtextextended('modelgate budget ' || scopes[i] || ' ' || ids[i] || ' ' || periods[i] || ' ' || starts[i], 0));
	END LOOP;
	FOR i IN 1 .. n LOOP
		u[i] := coalesce((SELECT b.spent_pico FROM budget_spend b WHERE b.scope = scopes[i] AND b.scope_id = ids[i]
				AND b.period = periods[i] AND b.period_start_us = starts[i]), 0)
			+ coalesce((SELECT sum(r.pico) FROM budget_reservations r WHERE r.scope = scopes[i] AND r.scope_id = ids[i]
				AND r.period = periods[i] AND r.period_start_us = starts[i] AND r.expires_us > now_us), 0);
	END LOOP;
	FOR j IN 1 .. m LOOP
		FOR i IN 1 .. n LOOP
			IF u[i] + greatest(ests[j], 0) > limits[i] THEN
				refused := i;
				used := least(u[i], 9223372036854775807)::bigint;
				RETURN;
			END IF;
		END LOOP;
		IF ests[j] > 0 THEN
			FOR i IN 1 .. n LOOP
				INSERT INTO budget_reservations (scope, scope_id, period, period_start_us, ticket, pico, expires_us)
					VALUES (scopes[i], ids[i], periods[i], starts[i], tkts[j], ests[j], expires_us[j]) ON CONFLICT DO NOTHING;
				u[i] := u[i] + ests[j];
			END LOOP;
		END IF;
		admitted := j;
	END LOOP;
END
$fn$`

// installReserveFunction creates the reservation function, under the
// migration lock so that instances starting together do not race on it.
func (s *sqlStore) installReserveFunction(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.d.lockMigrations(ctx, tx); err != nil {
		return err
	}
	for _, f := range []string{reserveFunction, reserveManyFunction, leaseFunction} {
		if _, err := tx.ExecContext(ctx, f); err != nil {
			return fmt.Errorf("ledger postgres: installing the budget reservation functions: %w", err)
		}
	}
	return tx.Commit()
}

// holdArrays are holds column by column: pgx encodes Go slices as
// PostgreSQL arrays, which the reservation functions take.
type holdArrays struct {
	scopes, ids, periods []string
	starts, limits       []int64
}

func arraysOf(holds []BudgetHold) holdArrays {
	n := len(holds)
	a := holdArrays{scopes: make([]string, n), ids: make([]string, n), periods: make([]string, n),
		starts: make([]int64, n), limits: make([]int64, n)}
	for i, h := range holds {
		a.scopes[i], a.ids[i], a.periods[i] = h.Scope, h.ScopeID, h.Period
		a.starts[i], a.limits[i] = h.PeriodStart.UnixMicro(), h.LimitPico
	}
	return a
}

func (s *sqlStore) SharesReservations() bool { return s.d.sharedReservations }

func (s *sqlStore) Reserve(ctx context.Context, holds []BudgetHold, ticket uint64, pico int64, now, expires time.Time) (int, int64, error) {
	if !s.d.sharedReservations {
		return 0, 0, ErrNotShared
	}
	a := arraysOf(holds)
	var refused int
	var used int64
	err := s.db.QueryRowContext(ctx, `SELECT refused, used FROM modelgate_reserve_v3($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6, $7, $8, $9)`,
		a.scopes, a.ids, a.periods, a.starts, a.limits, max(pico, 0), int64(ticket), now.UnixMicro(), expires.UnixMicro()).Scan(&refused, &used)
	if err != nil {
		return 0, 0, fmt.Errorf("ledger: reserving budget: %w", err)
	}
	return refused, used, nil
}

func (s *sqlStore) ReserveMany(ctx context.Context, holds []BudgetHold, tickets []BudgetTicket, now time.Time) (int, int, int64, error) {
	if !s.d.sharedReservations {
		return 0, 0, 0, ErrNotShared
	}
	a := arraysOf(holds)
	m := len(tickets)
	ests, tkts, expires := make([]int64, m), make([]int64, m), make([]int64, m)
	for j, t := range tickets {
		ests[j], tkts[j], expires[j] = max(t.Pico, 0), int64(t.Ticket), t.Expires.UnixMicro()
	}
	var admitted, refused int
	var used int64
	err := s.db.QueryRowContext(ctx, `SELECT admitted, refused, used FROM modelgate_reserve_many_v2($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8, $9::bigint[])`,
		a.scopes, a.ids, a.periods, a.starts, a.limits, ests, tkts, now.UnixMicro(), expires).Scan(&admitted, &refused, &used)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("ledger: reserving budget: %w", err)
	}
	return admitted, refused, used, nil
}

func (s *sqlStore) SweepReservations(ctx context.Context, now time.Time) error {
	if !s.d.sharedReservations {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `DELETE FROM budget_reservations WHERE expires_us <= $1`, now.UnixMicro())
	return err
}

// endReservations deletes the reservations of the requests recs record,
// in the transaction that adds their costs to budget_spend.
func (s *sqlStore) endReservations(ctx context.Context, tx *sql.Tx, recs []Record) error {
	if !s.d.sharedReservations {
		return nil
	}
	var tickets []int64
	for i := range recs {
		// A request drawn from a lease has no reservation of its own.
		if t := recs[i].Ticket; t != 0 && recs[i].Lease == 0 {
			tickets = append(tickets, int64(t))
		}
	}
	if len(tickets) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM budget_reservations WHERE ticket = ANY($1::bigint[])`, tickets); err != nil {
		return fmt.Errorf("ledger insert: ending budget reservations: %w", err)
	}
	return nil
}
