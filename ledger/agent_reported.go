package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Deleting agent-reported records: a coding agent's own report of a
// request the gateway did not serve is the client's word, so an admin can
// take one back, with everything it added (its roll-up sums, and its
// budget spend when a budget counted it).

// AgentReportedSelector picks the agent-reported records of one session
// of one key, or one of them by its request id.
type AgentReportedSelector struct {
	KeyID, SessionID string
	RequestID        string // "": every record of the session
	// Person and Groups are whom the key's counted reports were charged
	// to besides it (Record.Person, Groups: the key's person and their
	// groups, fixed when it was minted, and not stored with a record), so
	// that their spend goes back too.
	Person, Groups string
}

// AgentReportedDeleted is what a delete took back.
type AgentReportedDeleted struct {
	Records int
	// CostPico is the records' cost; CountedPico the part of it budgets
	// counted (records that were not report-only).
	CostPico, CountedPico int64
}

// AgentReportedDeleter deletes agent-reported records.
type AgentReportedDeleter interface {
	DeleteAgentReported(ctx context.Context, sel AgentReportedSelector) (AgentReportedDeleted, error)
}

func (s *sqlStore) DeleteAgentReported(ctx context.Context, sel AgentReportedSelector) (AgentReportedDeleted, error) {
	var out AgentReportedDeleted
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return out, fmt.Errorf("ledger delete: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	recs, err := s.deleteReportsTx(ctx, tx, sel, false)
	if err != nil || len(recs) == 0 {
		return out, err
	}
	if sel.RequestID == "" {
		// Nothing of the session is left for a gateway record to take
		// back (agent_dedup.go).
		if _, err := tx.ExecContext(ctx, `DELETE FROM counted_report_sessions WHERE session_id = `+s.d.placeholder(1)+
			` AND key_id = `+s.d.placeholder(2), sel.SessionID, sel.KeyID); err != nil {
			return out, fmt.Errorf("ledger delete: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return out, fmt.Errorf("ledger delete: %w", err)
	}
	out.Records = len(recs)
	for i := range recs {
		addSat(&out.CostPico, recs[i].CostPicoUSD)
		if !recs[i].ReportOnly {
			addSat(&out.CountedPico, recs[i].CostPicoUSD)
		}
	}
	return out, nil
}

// deleteReportsTx deletes the agent-reported records sel picks (only the
// counted ones with countedOnly) in tx, with what they added to budget
// spend and the roll-ups, and returns them.
func (s *sqlStore) deleteReportsTx(ctx context.Context, tx *sql.Tx, sel AgentReportedSelector, countedOnly bool) ([]Record, error) {
	p := s.d.placeholder
	where := ` WHERE endpoint = '` + string(EndpointAgentReported) + `' AND key_id = ` + p(1) + ` AND session_id = ` + p(2)
	args := []any{sel.KeyID, sel.SessionID}
	if sel.RequestID != "" {
		where += ` AND request_id = ` + p(3)
		args = append(args, sel.RequestID)
	}
	if countedOnly {
		where += ` AND report_only = 0`
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+recordColumns+` FROM usage_records`+where, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger delete: %w", err)
	}
	recs, err := scanRecords(rows)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	for i := range recs {
		recs[i].Person, recs[i].Groups = sel.Person, sel.Groups
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM usage_records`+where, args...); err != nil {
		return nil, fmt.Errorf("ledger delete: %w", err)
	}
	// In the insert's order (spend, then roll-ups), rows sorted alike,
	// so a delete and a concurrent insert lock rows in one order.
	if err := s.subtractSpend(ctx, tx, recs); err != nil {
		return nil, err
	}
	for _, table := range rollupTables() {
		if err := s.subtractRollup(ctx, tx, table.name, rollupOf(recs, table.width)); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// lessSQL is col less the value given twice, as placeholders v and w
// (SQLite's are positional), never below 0: a sum that saturated on the
// way up cannot give back more than it holds.
func lessSQL(col, v, w string) string {
	return col + ` = CASE WHEN ` + col + ` > ` + v + ` THEN ` + col + ` - ` + w + ` ELSE 0 END`
}

func (s *sqlStore) subtractSpend(ctx context.Context, tx *sql.Tx, recs []Record) error {
	m := spendOf(recs)
	p := s.d.placeholder
	q := `UPDATE budget_spend SET ` + lessSQL("spent_pico", p(1), p(2)) + ` WHERE scope = ` + p(3) + ` AND scope_id = ` + p(4) +
		` AND period = ` + p(5) + ` AND period_start_us = ` + p(6)
	for _, k := range sortedKeys(m, compareSpendKeys) {
		if _, err := tx.ExecContext(ctx, q, m[k], m[k], k.scope, k.id, k.period, k.start); err != nil {
			return fmt.Errorf("ledger delete: budget spend: %w", err)
		}
	}
	return nil
}

func (s *sqlStore) subtractRollup(ctx context.Context, tx *sql.Tx, table string, m map[rollupKey]*rollupSums) error {
	p := s.d.placeholder
	cols := strings.Fields(strings.ReplaceAll(rollupSumColumns, ",", " "))
	var q strings.Builder
	q.WriteString(`UPDATE ` + table + ` SET `)
	for i, c := range cols {
		if i > 0 {
			q.WriteString(", ")
		}
		q.WriteString(lessSQL(c, p(2*i+1), p(2*i+2)))
	}
	n := 2 * len(cols)
	q.WriteString(` WHERE bucket_us = ` + p(n+1) + ` AND alias = ` + p(n+2) + ` AND upstream_model = ` + p(n+3) + ` AND key_id = ` + p(n+4) +
		` AND workspace = ` + p(n+5) + ` AND service_tier = ` + p(n+6) + ` AND context_window = ` + p(n+7))
	args := make([]any, 0, n+7)
	for _, k := range sortedKeys(m, compareRollupKeys) {
		args = args[:0]
		for _, v := range m[k] {
			args = append(args, v, v)
		}
		args = append(args, k.bucket, k.alias, k.upstream, k.key, k.workspace, k.tier, k.cwind)
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return fmt.Errorf("ledger delete: report roll-up: %w", err)
		}
	}
	return nil
}
