package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Budget leases: an instance holds budget headroom in the database as one
// lease (a ticket) over a set of budgets, one budget_reservations row per
// budget, and admits requests by drawing their estimates from it in
// memory. The rows count against every budget exactly as per-request
// reservations do (spend plus every live row stays at or below the limit
// when headroom is granted), so what instances admit together is what one
// would; the lease is topped up in one round trip when it runs out, and
// near the limit a top-up grants exactly the waiting requests' estimates,
// so admission there is what serial per-request reservation gives. The
// insert that writes a request's record subtracts its estimate from its
// lease's rows in the transaction that adds its cost to budget_spend: the
// cost is counted once, by the lease until then and by spend after.

// LeaseReserver keeps budget leases.
type LeaseReserver interface {
	BudgetReserver
	// TopUpLease admits ests in order against holds (sorted by the
	// caller), as ReserveMany would, on lease ticket, which holds residual
	// unused headroom this instance has not drawn: a request is admitted
	// while spend plus live reservations minus residual plus its estimate
	// is at most every limit, first from residual, then by growing the
	// lease. A request whose estimate does not fit but whose floor (the
	// least it can run on; floors[j] <= ests[j]) does is admitted on what
	// is left, LastPico saying how much; it is then the last admitted.
	// When every request was admitted and every budget has room for at
	// least four times want, the lease grows by want more. Rows expire at
	// expires unless renewed.
	TopUpLease(ctx context.Context, holds []BudgetHold, ticket uint64, ests, floors []int64, residual, want int64, now, expires time.Time) (LeaseGrant, error)
	// RenewLeases moves the expiry of the tickets' live rows to expires.
	RenewLeases(ctx context.Context, tickets []uint64, now, expires time.Time) error
	// ShrinkLease gives back pico of ticket's headroom; with pico < 0 it
	// ends the lease (its rows are deleted).
	ShrinkLease(ctx context.Context, ticket uint64, pico int64) error
}

// LeaseGrant is what one top-up of a lease admitted.
type LeaseGrant struct {
	// Admitted is how many of the estimates were admitted, in order;
	// LastPico what the last of them was granted (its estimate, or less
	// down to its floor when only that fitted).
	Admitted int
	LastPico int64
	// Refused is the 1-based hold that refused the next request: it had
	// UsedPico spent and reserved, SpentPico of it spent.
	Refused             int
	UsedPico, SpentPico int64
	// Grown is by how much the lease's rows grew.
	Grown int64
}

// leaseFunction is installed on PostgreSQL at open, beside the
// reservation functions, under the same rule: admissions on a budget
// queue on its advisory lock and read spend and reservations in one
// snapshot. A lease row whose expiry passed is restarted, not grown.
const leaseFunction = `CREATE OR REPLACE FUNCTION modelgate_lease_v2(scopes text[], ids text[], periods text[], starts bigint[],
	limits bigint[], ests bigint[], floors bigint[], tkt bigint, residual bigint, want bigint, now_us bigint, expires_us bigint, own text,
	OUT admitted int, OUT last_grant bigint, OUT refused int, OUT used bigint, OUT spent bigint, OUT grown bigint)
LANGUAGE plpgsql AS $fn$
DECLARE
	i int;
	j int;
	k int;
	n int := coalesce(array_length(scopes, 1), 0);
	m int := coalesce(array_length(ests, 1), 0);
	s numeric[];
	u numeric[];
	sp numeric;
	rs numeric;
	r bigint := greatest(residual, 0);
	room numeric;
	e bigint;
	f bigint;
BEGIN
	PERFORM set_config('synchronous_commit', 'off', true);
	admitted := 0;
	last_grant := 0;
	refused := 0;
	used := 0;
	spent := 0;
	grown := 0;
	FOR i IN 1 .. n LOOP
		PERFORM pg_advisory_xact_lock(hashtextextended('modelgate budget ' || scopes[i] || ' ' || ids[i] || ' ' || periods[i] || ' ' || starts[i], 0));
	END LOOP;
	FOR i IN 1 .. n LOOP
		-- Spend and reservations in one statement, one snapshot: the
		-- writer moves a cost from the one to the other in a transaction
		-- that could commit between two reads, and the cost would be in
		-- neither.
		SELECT coalesce((SELECT b.spent_pico FROM budget_spend b WHERE b.scope = scopes[i] AND b.scope_id = ids[i]
				AND b.period = periods[i] AND b.period_start_us = starts[i]), 0),
			coalesce((SELECT sum(x.pico) FROM budget_reservations x WHERE x.scope = scopes[i] AND x.scope_id = ids[i]
				AND x.period = periods[i] AND x.period_start_us = starts[i] AND x.expires_us > now_us), 0)
		INTO sp, rs;
		s[i] := sp;
		u[i] := sp + rs;
	END LOOP;
	<<tickets>>
	FOR j IN 1 .. m LOOP
		-- The room left on the tightest budget. The lease's undrawn
		-- headroom backs no request: serial reservations would not count
		-- it. The request's own worst case must fit in it, or at least
		-- its floor (its output bound is then lowered to what is left).
		room := NULL;
		k := 0;
		FOR i IN 1 .. n LOOP
			IF room IS NULL OR limits[i] - (u[i] - r) < room THEN
				room := limits[i] - (u[i] - r);
				k := i;
			END IF;
		END LOOP;
		e := greatest(ests[j], 0);
		f := least(greatest(floors[j], 0), e);
		IF room < greatest(f, 1) THEN
			refused := k;
			used := least(greatest(u[k] - r, 0), 9223372036854775807)::bigint;
			spent := least(s[k], 9223372036854775807)::bigint;
			EXIT tickets;
		END IF;
		IF room < e THEN
			e := room::bigint;
		END IF;
		IF e <= r THEN
			r := r - e;
		ELSE
			grown := grown + (e - r);
			FOR i IN 1 .. n LOOP
				u[i] := u[i] + (e - r);
			END LOOP;
			r := 0;
		END IF;
		admitted := j;
		last_grant := e;
	END LOOP;
	IF refused = 0 AND want > r THEN
		room := NULL;
		FOR i IN 1 .. n LOOP
			room := least(coalesce(room, limits[i] - u[i]), limits[i] - u[i]);
		END LOOP;
		-- Headroom is held only far from the limit, so that near it every
		-- instance reserves what serial reservations would.
		IF room >= 4 * (want - r) THEN
			grown := grown + (want - r);
		END IF;
	END IF;
	FOR i IN 1 .. n LOOP
		INSERT INTO budget_reservations AS x (scope, scope_id, period, period_start_us, ticket, pico, expires_us, owner)
			VALUES (scopes[i], ids[i], periods[i], starts[i], tkt, grown, expires_us, own)
			ON CONFLICT (scope, scope_id, period, period_start_us, ticket) DO UPDATE SET
				pico = CASE WHEN x.expires_us > now_us THEN x.pico + excluded.pico ELSE excluded.pico END,
				expires_us = greatest(x.expires_us, excluded.expires_us);
	END LOOP;
END
$fn$`

// lockLeaseRows locks the rows of the tickets in $1 in one order (the
// order admissions write them in: budget, then ticket, byte-wise), so that
// a writer, a renewal and a top-up on the same lease never wait on each
// other in a circle.
//
// The statements after it find the rows again by their key, not by the
// ctid the lock returned: a row a top-up updated meanwhile is a new
// version, which a ctid taken before the wait would miss.
const lockLeaseRows = `WITH l AS (SELECT x.scope, x.scope_id, x.period, x.period_start_us, x.ticket FROM budget_reservations x WHERE x.ticket = ANY($1::bigint[])
	ORDER BY x.scope COLLATE "C", x.scope_id COLLATE "C", x.period COLLATE "C", x.period_start_us, x.ticket FOR UPDATE)`

// leaseRowIs matches a budget_reservations row to its locked l row.
const leaseRowIs = `budget_reservations.scope = l.scope AND budget_reservations.scope_id = l.scope_id AND budget_reservations.period = l.period
	AND budget_reservations.period_start_us = l.period_start_us AND budget_reservations.ticket = l.ticket`

func (s *sqlStore) TopUpLease(ctx context.Context, holds []BudgetHold, ticket uint64, ests, floors []int64, residual, want int64, now, expires time.Time) (LeaseGrant, error) {
	if !s.d.sharedReservations {
		return LeaseGrant{}, ErrNotShared
	}
	a := arraysOf(holds)
	var g LeaseGrant
	err := s.db.QueryRowContext(ctx, `SELECT admitted, last_grant, refused, used, spent, grown FROM modelgate_lease_v2($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[], $8, $9, $10, $11, $12, $13)`,
		a.scopes, a.ids, a.periods, a.starts, a.limits, ests, floors, int64(ticket), residual, max(want, 0), now.UnixMicro(), expires.UnixMicro(), s.owner).Scan(
		&g.Admitted, &g.LastPico, &g.Refused, &g.UsedPico, &g.SpentPico, &g.Grown)
	if err != nil {
		return LeaseGrant{}, fmt.Errorf("ledger: reserving budget: %w", err)
	}
	return g, nil
}

func (s *sqlStore) RenewLeases(ctx context.Context, tickets []uint64, now, expires time.Time) error {
	if !s.d.sharedReservations || len(tickets) == 0 {
		return nil
	}
	t := make([]int64, len(tickets))
	for i, v := range tickets {
		t[i] = int64(v)
	}
	_, err := s.db.ExecContext(ctx, lockLeaseRows+` UPDATE budget_reservations SET expires_us = greatest(expires_us, $3)
		FROM l WHERE `+leaseRowIs+` AND budget_reservations.expires_us > $2`, t, now.UnixMicro(), expires.UnixMicro())
	if err != nil {
		return fmt.Errorf("ledger: renewing budget leases: %w", err)
	}
	return nil
}

func (s *sqlStore) ShrinkLease(ctx context.Context, ticket uint64, pico int64) error {
	if !s.d.sharedReservations {
		return nil
	}
	var err error
	if pico < 0 {
		_, err = s.db.ExecContext(ctx, lockLeaseRows+` DELETE FROM budget_reservations USING l WHERE `+leaseRowIs, []int64{int64(ticket)})
	} else {
		_, err = s.db.ExecContext(ctx, lockLeaseRows+` UPDATE budget_reservations SET pico = greatest(budget_reservations.pico - $2, 0)
			FROM l WHERE `+leaseRowIs, []int64{int64(ticket)}, pico)
	}
	if err != nil {
		return fmt.Errorf("ledger: returning budget headroom: %w", err)
	}
	return nil
}

// drawLeases subtracts the estimates of the requests recs record from
// their leases, in the transaction that adds their costs to budget_spend.
func (s *sqlStore) drawLeases(ctx context.Context, tx *sql.Tx, recs []Record) error {
	if !s.d.sharedReservations {
		return nil
	}
	sum := map[uint64]int64{}
	for i := range recs {
		if r := &recs[i]; r.Lease != 0 && r.LeasePico > 0 {
			sum[r.Lease] += r.LeasePico
		}
	}
	if len(sum) == 0 {
		return nil
	}
	tickets, picos := make([]int64, 0, len(sum)), make([]int64, 0, len(sum))
	for t, p := range sum {
		tickets, picos = append(tickets, int64(t)), append(picos, p)
	}
	if _, err := tx.ExecContext(ctx, lockLeaseRows+`, d AS (SELECT unnest($2::bigint[]) AS ticket, unnest($3::bigint[]) AS pico)
		UPDATE budget_reservations SET pico = greatest(budget_reservations.pico - d.pico, 0)
		FROM l JOIN d ON d.ticket = l.ticket WHERE `+leaseRowIs, tickets, tickets, picos); err != nil {
		return fmt.Errorf("ledger insert: drawing budget leases: %w", err)
	}
	return nil
}
