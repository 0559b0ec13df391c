package ledger

// One request counted once when a coding agent's own report of it and the
// gateway's record of it reach different instances. agentotel drops the
// report of a session the gateway served (the instance's own memory of
// the sessions it serves, then the ledger); what neither can see is a
// gateway record not yet written when the report arrives elsewhere. The
// insert settles it, in the transaction that adds the costs, with the
// session locked on PostgreSQL so that the two inserts run one after the
// other: a counted report of a session the gateway served is dropped,
// and a gateway record of a session whose reports were counted takes
// those reports back (their rows, spend and roll-ups), as an admin's
// delete would. Only counted reports (Record.ReportOnly false) are
// settled: a report-only one moves no budget.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"
)

// countedReportsMigration keeps, per session and reporting key, whom a
// counted report was charged to (its person and groups, which a record
// does not store), so that a later gateway record of the session can
// take the report back from their spend too; and indexes the counted
// reports by session.
const countedReportsMigration = `CREATE TABLE counted_report_sessions (
	session_id TEXT NOT NULL,
	key_id TEXT NOT NULL,
	person TEXT NOT NULL,
	groups TEXT NOT NULL,
	ts_us BIGINT NOT NULL,
	PRIMARY KEY (session_id, key_id)
);
CREATE INDEX counted_report_sessions_ts ON counted_report_sessions (ts_us);
CREATE INDEX usage_records_counted_reports ON usage_records (session_id) WHERE endpoint = 'agent_reported' AND report_only = 0`

// servedWindow is how far back a counted report looks for the gateway's
// records of its session, as agentotel's check does: a coding session
// does not outlive a day or two.
const servedWindow = 48 * time.Hour

// settleReports is recs without the counted reports of sessions the
// gateway served, after taking back the counted reports of the sessions
// recs' gateway records are of; it runs first in an insert's tx.
func (s *sqlStore) settleReports(ctx context.Context, tx *sql.Tx, recs []Record) ([]Record, error) {
	served := map[string]bool{} // sessions of the batch's gateway records
	var reports bool
	for i := range recs {
		r := &recs[i]
		switch {
		case r.SessionID == "":
		case r.Endpoint != EndpointAgentReported:
			served[r.SessionID] = true
		case !r.ReportOnly:
			reports = true
		}
	}
	if len(served) == 0 && !reports {
		return recs, nil
	}
	sessions := make([]string, 0, len(served)+1)
	for i := range recs {
		if r := &recs[i]; r.SessionID != "" && (r.Endpoint != EndpointAgentReported || !r.ReportOnly) {
			sessions = append(sessions, r.SessionID)
		}
	}
	slices.Sort(sessions)
	sessions = slices.Compact(sessions)
	if s.d.arrays {
		// In one order everywhere: two inserts never wait on each other
		// in a cycle.
		if _, err := tx.ExecContext(ctx, `SELECT count(pg_advisory_xact_lock(hashtextextended('modelgate session ' || u.s, 0)))
			FROM unnest($1::text[]) WITH ORDINALITY AS u(s, n)`, sessions); err != nil {
			return recs, fmt.Errorf("ledger insert: locking sessions: %w", err)
		}
	}
	if len(served) > 0 {
		if err := s.takeBackReports(ctx, tx, served); err != nil {
			return recs, err
		}
	}
	if !reports {
		return recs, nil
	}
	known := map[string]bool{}
	out := recs[:0:0]
	for i := range recs {
		r := &recs[i]
		if r.Endpoint != EndpointAgentReported || r.ReportOnly || r.SessionID == "" {
			out = append(out, *r)
			continue
		}
		dup, ok := known[r.SessionID]
		if !ok {
			var err error
			if dup, err = s.sessionServedTx(ctx, tx, r.SessionID, r.Time.Add(-servedWindow)); err != nil {
				return recs, err
			}
			dup = dup || served[r.SessionID]
			known[r.SessionID] = dup
		}
		if dup {
			continue
		}
		if err := s.noteCountedReport(ctx, tx, r); err != nil {
			return recs, err
		}
		out = append(out, *r)
	}
	return out, nil
}

// sessionServedTx is SessionServed inside tx.
func (s *sqlStore) sessionServedTx(ctx context.Context, tx *sql.Tx, session string, since time.Time) (bool, error) {
	p := s.d.placeholder
	var one int
	err := tx.QueryRowContext(ctx, `SELECT 1 FROM usage_records WHERE ts_us >= `+p(1)+` AND session_id = `+p(2)+
		` AND endpoint <> '`+string(EndpointAgentReported)+`' LIMIT 1`, since.UnixMicro(), session).Scan(&one)
	if err == sql.ErrNoRows {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger insert: session served: %w", err)
	}
	return true, nil
}

// noteCountedReport remembers whom r, a counted report, was charged to.
func (s *sqlStore) noteCountedReport(ctx context.Context, tx *sql.Tx, r *Record) error {
	p := s.d.placeholder
	_, err := tx.ExecContext(ctx, `INSERT INTO counted_report_sessions (session_id, key_id, person, groups, ts_us) VALUES (`+
		p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`) ON CONFLICT (session_id, key_id) DO UPDATE SET person = excluded.person,
		groups = excluded.groups, ts_us = excluded.ts_us`, r.SessionID, r.KeyID, r.Person, r.Groups, r.Time.UnixMicro())
	if err != nil {
		return fmt.Errorf("ledger insert: counted report: %w", err)
	}
	return nil
}

// takeBackReports deletes the counted reports of the sessions served,
// with what they added to budgets and roll-ups.
func (s *sqlStore) takeBackReports(ctx context.Context, tx *sql.Tx, served map[string]bool) error {
	p := s.d.placeholder
	ids := make([]string, 0, len(served))
	for id := range served {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	args := make([]any, len(ids))
	marks := make([]string, len(ids))
	for i, id := range ids {
		args[i], marks[i] = id, p(i+1)
	}
	rows, err := tx.QueryContext(ctx, `SELECT session_id, key_id, person, groups FROM counted_report_sessions WHERE session_id IN (`+
		strings.Join(marks, ", ")+`) ORDER BY session_id, key_id`, args...)
	if err != nil {
		return fmt.Errorf("ledger insert: counted reports: %w", err)
	}
	var sels []AgentReportedSelector
	for rows.Next() {
		var sel AgentReportedSelector
		if err := rows.Scan(&sel.SessionID, &sel.KeyID, &sel.Person, &sel.Groups); err != nil {
			rows.Close()
			return fmt.Errorf("ledger insert: counted reports: %w", err)
		}
		sels = append(sels, sel)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("ledger insert: counted reports: %w", err)
	}
	for _, sel := range sels {
		if _, err := s.deleteReportsTx(ctx, tx, sel, true); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM counted_report_sessions WHERE session_id = `+p(1)+` AND key_id = `+p(2),
			sel.SessionID, sel.KeyID); err != nil {
			return fmt.Errorf("ledger insert: counted reports: %w", err)
		}
	}
	return nil
}

// purgeCountedReports deletes the notes of counted reports before cut
// (Unix microseconds), with the records.
func (s *sqlStore) purgeCountedReports(ctx context.Context, cut int64) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM counted_report_sessions WHERE ts_us < `+s.d.placeholder(1), cut); err != nil {
		return fmt.Errorf("purging counted reports: %w", err)
	}
	return nil
}
