package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Budget spend: what each key, workspace and coding-agent session has
// spent in each budget period, kept in the ledger database by the same
// transaction that inserts the records, so spend and records never
// disagree and every instance on the database sees one number.

// Budget scopes.
const (
	ScopeKey       = "api_key"
	ScopeWorkspace = "workspace"
	ScopeSession   = "session"
)

// budgetPeriods are the periods a budget can have.
func budgetPeriods() [4]string { return [4]string{"daily", "weekly", "monthly", "total"} }

func plusSat(a, b int64) int64 {
	addSat(&a, b)
	return a
}

// PeriodStart is the start of the budget period holding t, in UTC
// calendar terms (weeks start on Monday); a total has one period.
func PeriodStart(period string, t time.Time) time.Time {
	start, _ := PeriodBounds(period, t)
	return start
}

// PeriodBounds is the start of the budget period holding t
// (PeriodStart) and its end (zero for a total), with the date found
// once: every admission with a budget asks for them.
func PeriodBounds(period string, t time.Time) (start, end time.Time) {
	y, m, d := t.UTC().Date()
	day := func(d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }
	switch period {
	case "daily":
		return day(d), day(d + 1)
	case "weekly":
		monday := d - (int(day(d).Weekday())+6)%7
		return day(monday), day(monday + 7)
	case "monthly":
		return day(1), time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
	}
	return time.Unix(0, 0).UTC(), time.Time{}
}

// SessionScopeID names a session's spend: sessions are a key's.
func SessionScopeID(keyID, sessionID string) string { return keyID + " " + sessionID }

// Spend is one scope's spend in one period.
type Spend struct {
	Scope, ScopeID, Period string
	PeriodStart            time.Time
	SpentPico              int64
}

type spendKey struct {
	scope, id, period string
	start             int64
}

func compareSpendKeys(a, b spendKey) int {
	return cmp.Or(strings.Compare(a.scope, b.scope), strings.Compare(a.id, b.id), strings.Compare(a.period, b.period), cmp.Compare(a.start, b.start))
}

// spendOf adds up what recs cost per scope and period.
func spendOf(recs []Record) map[spendKey]int64 {
	m := map[spendKey]int64{}
	// Every period starts at one time all through a UTC day, and a batch's
	// records are mostly of one day: their starts are found once for it.
	var day struct {
		from, to time.Time
		starts   [4]int64 // by budgetPeriods
	}
	for i := range recs {
		r := &recs[i]
		if r.CostPicoUSD <= 0 || r.ReportOnly {
			continue
		}
		if r.Time.Before(day.from) || !r.Time.Before(day.to) {
			day.from, day.to = PeriodBounds("daily", r.Time)
			for j, p := range budgetPeriods() {
				day.starts[j] = PeriodStart(p, r.Time).UnixMicro()
			}
		}
		for j, p := range budgetPeriods() {
			start := day.starts[j]
			if r.KeyID != "" {
				m[spendKey{ScopeKey, r.KeyID, p, start}] = plusSat(m[spendKey{ScopeKey, r.KeyID, p, start}], r.CostPicoUSD)
			}
			if r.Workspace != "" {
				m[spendKey{ScopeWorkspace, r.Workspace, p, start}] = plusSat(m[spendKey{ScopeWorkspace, r.Workspace, p, start}], r.CostPicoUSD)
			}
			addScopeSpend(m, r, p, start)
		}
		if r.SessionID != "" {
			k := spendKey{ScopeSession, SessionScopeID(r.KeyID, r.SessionID), "total", 0}
			m[k] = plusSat(m[k], r.CostPicoUSD)
		}
	}
	return m
}

// maxSpend keeps the running sum far from int64 overflow, which would
// fail the insert and with it the batch of records.
const maxSpend = 1 << 62

// spendConflictSQL adds a batch's spend to a period's running sum.
func spendConflictSQL() string {
	return `ON CONFLICT (scope, scope_id, period, period_start_us) DO UPDATE SET
	spent_pico = CASE WHEN budget_spend.spent_pico >= ` + fmt.Sprint(maxSpend) + ` THEN budget_spend.spent_pico ELSE budget_spend.spent_pico + excluded.spent_pico END,
	updated_us = excluded.updated_us`
}

func (s *sqlStore) addSpend(ctx context.Context, tx *sql.Tx, recs []Record) error {
	m := spendOf(recs)
	if len(m) == 0 {
		return nil
	}
	now := time.Now().UnixMicro()
	// In one order on every instance, as the roll-ups: map order would
	// let two writers lock the same rows in opposite orders.
	keys := sortedKeys(m, compareSpendKeys)
	if s.d.arrays {
		return addSpendArrays(ctx, tx, s.pg.spend, keys, m, now)
	}
	p := s.d.placeholder
	q := `INSERT INTO budget_spend (scope, scope_id, period, period_start_us, spent_pico, updated_us)
VALUES (` + p(1) + `, ` + p(2) + `, ` + p(3) + `, ` + p(4) + `, ` + p(5) + `, ` + p(6) + `)
` + spendConflictSQL()
	// Prepared once for the batch: SQLite would otherwise compile the
	// statement again for every row.
	stmt, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return fmt.Errorf("ledger insert: budget spend: %w", err)
	}
	defer stmt.Close()
	for _, k := range keys {
		if _, err := stmt.ExecContext(ctx, k.scope, k.id, k.period, k.start, min(m[k], maxSpend), now); err != nil {
			return fmt.Errorf("ledger insert: budget spend: %w", err)
		}
	}
	return nil
}

// SpendStore reads budget spend.
type SpendStore interface {
	// CurrentSpend is every key's and workspace's spend in the periods
	// holding now, and the spend of the sessions named (session scope
	// ids): only sessions with a budget are worth reading, and clients
	// choose session ids freely.
	CurrentSpend(ctx context.Context, now time.Time, sessions []string) ([]Spend, error)
}

// sessionsPerQuery bounds the session ids one query names.
const sessionsPerQuery = 500

func (s *sqlStore) CurrentSpend(ctx context.Context, now time.Time, sessions []string) ([]Spend, error) {
	p := s.d.placeholder
	args := make([]any, 0, 6)
	q := `SELECT scope, scope_id, period, period_start_us, spent_pico FROM budget_spend WHERE (period = 'total' AND scope <> '` + ScopeSession + `')`
	periods := budgetPeriods()
	for _, period := range periods[:3] {
		args = append(args, period, PeriodStart(period, now).UnixMicro())
		q += ` OR (period = ` + p(len(args)-1) + ` AND period_start_us = ` + p(len(args)) + `)`
	}
	out, err := s.readSpend(ctx, q, args)
	if err != nil {
		return nil, err
	}
	for len(sessions) > 0 {
		chunk := sessions[:min(len(sessions), sessionsPerQuery)]
		sessions = sessions[len(chunk):]
		var b strings.Builder
		b.WriteString(`SELECT scope, scope_id, period, period_start_us, spent_pico FROM budget_spend WHERE scope = '` + ScopeSession + `' AND scope_id IN (`)
		args = args[:0]
		for i, id := range chunk {
			if i > 0 {
				b.WriteByte(',')
			}
			args = append(args, id)
			b.WriteString(p(len(args)))
		}
		b.WriteByte(')')
		rows, err := s.readSpend(ctx, b.String(), args)
		if err != nil {
			return nil, err
		}
		out = append(out, rows...)
	}
	return out, nil
}

func (s *sqlStore) readSpend(ctx context.Context, q string, args []any) ([]Spend, error) {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Spend
	for rows.Next() {
		var sp Spend
		var start int64
		if err := rows.Scan(&sp.Scope, &sp.ScopeID, &sp.Period, &start, &sp.SpentPico); err != nil {
			return nil, err
		}
		sp.PeriodStart = time.UnixMicro(start).UTC()
		out = append(out, sp)
	}
	return out, rows.Err()
}

// AlertClaimer lets one instance, and one only, send an alert.
type AlertClaimer interface {
	// ClaimAlert records that kind was sent for the scope's period and
	// reports whether this call was the first to do so.
	ClaimAlert(ctx context.Context, scope, scopeID string, periodStart time.Time, kind string) (bool, error)
}

func (s *sqlStore) ClaimAlert(ctx context.Context, scope, scopeID string, periodStart time.Time, kind string) (bool, error) {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `INSERT INTO alerts_sent (scope, scope_id, period_start_us, kind, sent_us)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`) ON CONFLICT (scope, scope_id, period_start_us, kind) DO NOTHING`,
		scope, scopeID, periodStart.UnixMicro(), kind, time.Now().UnixMicro())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
