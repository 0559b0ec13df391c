package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The report roll-ups: usage_rollup (per hour) and usage_rollup_day (per
// UTC day) hold, per combination of the report dimensions, the sums the
// reports add up, each record clamped exactly as the reports clamp it.
// The insert that writes records adds to both in the same transaction, so
// they are never behind; reports over whole hours or days read them
// instead of every record.

const rollupWidth = time.Hour

// rollupTables are the roll-ups, finest first, with their bucket widths.
func rollupTables() [2]struct {
	name  string
	width time.Duration
} {
	return [2]struct {
		name  string
		width time.Duration
	}{{"usage_rollup", time.Hour}, {"usage_rollup_day", 24 * time.Hour}}
}

// rollupKey is one row of the roll-up.
type rollupKey struct {
	bucket                                       int64
	alias, upstream, key, workspace, tier, cwind string
}

func compareRollupKeys(a, b rollupKey) int {
	return cmp.Or(cmp.Compare(a.bucket, b.bucket), strings.Compare(a.alias, b.alias), strings.Compare(a.upstream, b.upstream),
		strings.Compare(a.key, b.key), strings.Compare(a.workspace, b.workspace), strings.Compare(a.tier, b.tier),
		strings.Compare(a.cwind, b.cwind))
}

// sortedKeys is m's keys in cmp's order.
func sortedKeys[K comparable, V any](m map[K]V, cmp func(a, b K) int) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp)
	return keys
}

// rollupSums are a row's sums, in the roll-up's column order.
type rollupSums [12]int64

// sumsOf is what one record adds, clamped as the report SQL clamps it.
func sumsOf(r *Record) rollupSums {
	tok := func(n int64) int64 { return clampInt(n, MaxTokens) }
	cost := func(n, price int64) int64 {
		// The tokens and the price are each bounded (2^31 × 2^30 fits an
		// int64), then the product is bounded like a record's cost.
		return clampInt(tok(n)*clampInt(price, MaxPrice), MaxCost)
	}
	p := r.Prices
	s := rollupSums{tok(r.InputTokens), tok(r.CacheCreation5m), tok(r.CacheCreation1h), tok(r.CacheReadTokens), tok(r.OutputTokens),
		clampInt(r.CostPicoUSD, MaxCost), cost(r.InputTokens, p.Input), cost(r.OutputTokens, p.Output),
		cost(r.CacheReadTokens, p.CacheRead), cost(r.CacheCreation5m, p.CacheWrite5m), cost(r.CacheCreation1h, p.CacheWrite1h), 0}
	if s[0] > 0 || s[1] > 0 || s[2] > 0 || s[3] > 0 || s[4] > 0 {
		s[11] = 1 // see usedTokensSQL
	}
	return s
}

// usedTokensSQL is true for a record that used tokens: the requests the
// roll-ups count. The usage report leaves out rows without usage, so a
// count that included requests failed before using anything would change
// with the bucket width (in a row of its own such a request vanishes, in
// a row beside used ones it counts).
const usedTokensSQL = `(input_tokens > 0 OR cache_creation_5m > 0 OR cache_creation_1h > 0 OR cache_read_tokens > 0 OR output_tokens > 0)`

const rollupSumColumns = `input_tokens, cache_creation_5m, cache_creation_1h, cache_read_tokens, output_tokens,
	cost_pico, cost_input, cost_output, cost_cache_read, cost_write_5m, cost_write_1h, requests`

func (s *sqlStore) addRollup(ctx context.Context, tx *sql.Tx, recs []Record) error {
	for _, table := range rollupTables() {
		if err := s.upsertRollup(ctx, tx, table.name, rollupOf(recs, table.width)); err != nil {
			return err
		}
	}
	return nil
}

// rollupOf is what recs add to the roll-up rows of buckets width wide.
func rollupOf(recs []Record, width time.Duration) map[rollupKey]*rollupSums {
	m := make(map[rollupKey]*rollupSums, 8)
	w := width.Microseconds()
	for i := range recs {
		r := &recs[i]
		ts := r.Time.UnixMicro()
		k := rollupKey{ts - ((ts%w)+w)%w, r.Alias, r.UpstreamModel, r.KeyID, r.Workspace, r.ServiceTier, r.contextWindow()}
		v := m[k]
		if v == nil {
			v = &rollupSums{}
			m[k] = v
		}
		for j, n := range sumsOf(r) {
			v[j] = plusSat(v[j], n)
		}
	}
	return m
}

// rollupColumns are the roll-up's columns: its key, then its sums.
const rollupColumns = `bucket_us, alias, upstream_model, key_id, workspace, service_tier, context_window, ` + rollupSumColumns

// rollupConflictSQL adds a batch's sums to the rows table already has.
func rollupConflictSQL(table string) string {
	q := `ON CONFLICT (bucket_us, alias, upstream_model, key_id, workspace, service_tier, context_window) DO UPDATE SET `
	cols := []string{"input_tokens", "cache_creation_5m", "cache_creation_1h", "cache_read_tokens", "output_tokens",
		"cost_pico", "cost_input", "cost_output", "cost_cache_read", "cost_write_5m", "cost_write_1h", "requests"}
	for i, c := range cols {
		if i > 0 {
			q += ", "
		}
		// Saturating at the largest int64, as the report sums do: an
		// absurd hour must not fail the insert that carries other records.
		q += c + " = CASE WHEN " + table + "." + c + " > 9223372036854775807 - excluded." + c + " THEN 9223372036854775807" +
			" ELSE " + table + "." + c + " + excluded." + c + " END"
	}
	return q
}

func (s *sqlStore) upsertRollup(ctx context.Context, tx *sql.Tx, table string, m map[rollupKey]*rollupSums) error {
	if len(m) == 0 {
		return nil
	}
	// Rows in one order for every instance: two writers upserting
	// overlapping rows in map order deadlock each other.
	keys := sortedKeys(m, compareRollupKeys)
	if s.d.arrays {
		return upsertRollupArrays(ctx, tx, s.pg.rollupSQL(table), keys, m)
	}
	p := s.d.placeholder
	q := `INSERT INTO ` + table + ` (` + rollupColumns + `) VALUES (`
	n := 7 + len(rollupSums{})
	for i := 1; i <= n; i++ {
		if i > 1 {
			q += ", "
		}
		q += p(i)
	}
	q += `) ` + rollupConflictSQL(table)
	// Prepared once for the batch: SQLite would otherwise compile the
	// statement again for every row.
	stmt, err := tx.PrepareContext(ctx, q)
	if err != nil {
		return fmt.Errorf("ledger insert: report roll-up: %w", err)
	}
	defer stmt.Close()
	args := make([]any, 0, n)
	for _, k := range keys {
		v := m[k]
		args = append(args[:0], k.bucket, k.alias, k.upstream, k.key, k.workspace, k.tier, k.cwind)
		for _, n := range v {
			args = append(args, n)
		}
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("ledger insert: report roll-up: %w", err)
		}
	}
	return nil
}

// backfillRollup builds the roll-up from the records stored before it
// existed, once. With `retention` set the records before its cutoff are
// gone while their roll-up rows stay: a later migration that resets
// rollup_state to rebuild the roll-ups would lose that history, so one
// must instead update the roll-up rows in place.
func (s *sqlStore) backfillRollup(ctx context.Context) error {
	var done int
	if err := s.db.QueryRowContext(ctx, `SELECT backfilled FROM rollup_state WHERE id = 1`).Scan(&done); err != nil || done == 1 {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.d.lockMigrations(ctx, tx); err != nil {
		return err
	}
	if err := tx.QueryRowContext(ctx, `SELECT backfilled FROM rollup_state WHERE id = 1`).Scan(&done); err != nil || done == 1 {
		return err
	}
	for _, table := range rollupTables() {
		if _, err := tx.ExecContext(ctx, `DELETE FROM `+table.name); err != nil {
			return err
		}
	}
	// In pages of records, summed in Go with the insert path's own code,
	// so the backfill and the live roll-up cannot disagree.
	const pageSize = 20000
	var after int64 = -1 << 62
	for {
		rows, err := tx.QueryContext(ctx, `SELECT `+recordColumns+` FROM usage_records WHERE ts_us > `+s.d.placeholder(1)+
			` ORDER BY ts_us LIMIT `+strconv.Itoa(pageSize), after)
		if err != nil {
			return err
		}
		recs, err := scanRecords(rows)
		if err != nil {
			return err
		}
		if len(recs) == 0 {
			break
		}
		// Records sharing the last timestamp must stay in one page.
		last := recs[len(recs)-1].Time.UnixMicro()
		if len(recs) == pageSize {
			cut := len(recs)
			for cut > 0 && recs[cut-1].Time.UnixMicro() == last {
				cut--
			}
			if cut == 0 {
				return fmt.Errorf("more than %d records share one microsecond", pageSize)
			}
			recs, last = recs[:cut], recs[cut-1].Time.UnixMicro()
		}
		if err := s.addRollup(ctx, tx, recs); err != nil {
			return err
		}
		after = last
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rollup_state SET backfilled = 1 WHERE id = 1`); err != nil {
		return err
	}
	return tx.Commit()
}

// aggregateRollup is aggregateRecords answered from the roll-up: the same
// columns, summed from hourly sums instead of records.
func (s *sqlStore) aggregateRollup(ctx context.Context, f Filter, w int64, cols []string, groupBy string, split bool) ([]AggregateRow, error) {
	// The coarsest roll-up whose buckets the query's fit exactly.
	table := "usage_rollup"
	day := (24 * time.Hour).Microseconds()
	if w%day == 0 && f.From.UnixMicro()%day == 0 && f.To.UnixMicro()%day == 0 {
		table = "usage_rollup_day"
	}
	sum := func(col string) string {
		if s.d.name == "postgres" {
			return "CAST(LEAST(SUM(" + col + "), 9223372036854775807) AS BIGINT)"
		}
		return "CAST(SUM(" + col + ") AS BIGINT)"
	}
	costSum := func(col string) string {
		if !split {
			return sum(col) + ", 0"
		}
		return sum("("+col+") >> "+strconv.Itoa(splitShift)) + ", " + sum("("+col+") & "+strconv.Itoa(1<<splitShift-1))
	}
	var q strings.Builder
	args := []any{w}
	q.WriteString("SELECT bucket_us / " + s.d.placeholder(1) + ", " + strings.Join(cols, ", ") + ", " +
		sum("input_tokens") + ", " + sum("cache_creation_5m") + ", " + sum("cache_creation_1h") + ", " +
		sum("cache_read_tokens") + ", " + sum("output_tokens") + ", " + costSum("cost_pico") + ", " +
		costSum("cost_input") + ", " + costSum("cost_output") + ", " + costSum("cost_cache_read") + ", " +
		costSum("cost_write_5m") + ", " + costSum("cost_write_1h") + ", " + sum("requests") + " FROM " + table)
	args = s.whereOn(&q, args, f, "bucket_us")
	q.WriteString(" GROUP BY " + groupBy + " ORDER BY 1")
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger aggregate: %w", err)
	}
	return scanAggregates(rows, w, split)
}
