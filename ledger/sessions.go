package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SessionRow is one coding-agent session's use, as
// GET /v1/organizations/sessions lists it.
type SessionRow struct {
	ID, Agent, KeyID, Workspace string
	First, Last                 time.Time
	Requests                    int64
	UncachedInput               int64
	CacheCreation, CacheRead    int64
	Output                      int64
	CostPico                    int64
	// AgentReported counts the requests known only from the agent's own
	// telemetry (endpoint agent_reported), not served by the gateway.
	AgentReported int64
	// Seat counts the requests served on the caller's own subscription
	// (Record.Notional): their cost is notional.
	Seat int64
}

// SessionLister lists sessions.
type SessionLister interface {
	// Sessions lists the sessions with records in f, dearest first;
	// refused requests are not counted. It returns up to limit rows after
	// skipping offset, and whether more follow.
	Sessions(ctx context.Context, f Filter, limit, offset int) ([]SessionRow, bool, error)
}

func (s *sqlStore) Sessions(ctx context.Context, f Filter, limit, offset int) ([]SessionRow, bool, error) {
	var q strings.Builder
	// Each value is clamped to the record bounds before it is summed, and
	// PostgreSQL's numeric sum saturates before the cast, as the reports do.
	clamp := func(col string, bound int64) string {
		v := s.d.least + "(" + s.d.greatest + "(" + col + ", 0), " + strconv.FormatInt(bound, 10) + ")"
		if s.d.name == "postgres" {
			return "CAST(LEAST(SUM(" + v + "), 9223372036854775807) AS BIGINT)"
		}
		return "CAST(SUM(" + v + ") AS BIGINT)"
	}
	q.WriteString(`SELECT session_id, MAX(agent), key_id, MAX(workspace), MIN(ts_us), MAX(ts_us), COUNT(*), ` +
		clamp("input_tokens", MaxTokens) + `, ` + clamp("cache_creation_5m + cache_creation_1h", MaxTokens) + `, ` +
		clamp("cache_read_tokens", MaxTokens) + `, ` + clamp("output_tokens", MaxTokens) + `, ` + clamp("cost_pico", MaxCost) +
		`, SUM(CASE WHEN endpoint = 'agent_reported' THEN 1 ELSE 0 END), SUM(notional) FROM usage_records`)
	args := s.where(&q, nil, f)
	q.WriteString(` AND session_id <> '' AND outcome <> 'refused' GROUP BY session_id, key_id ORDER BY ` +
		clamp("cost_pico", MaxCost) + ` DESC, session_id, key_id LIMIT ` + strconv.Itoa(limit+1) + ` OFFSET ` + strconv.Itoa(offset))
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, false, fmt.Errorf("ledger sessions: %w", err)
	}
	defer rows.Close()
	var out []SessionRow
	for rows.Next() {
		var r SessionRow
		var first, last int64
		if err := rows.Scan(&r.ID, &r.Agent, &r.KeyID, &r.Workspace, &first, &last, &r.Requests,
			&r.UncachedInput, &r.CacheCreation, &r.CacheRead, &r.Output, &r.CostPico, &r.AgentReported, &r.Seat); err != nil {
			return nil, false, fmt.Errorf("ledger sessions: %w", err)
		}
		r.First, r.Last = time.UnixMicro(first).UTC(), time.UnixMicro(last).UTC()
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// SessionServer tells whether the gateway served a session itself.
type SessionServer interface {
	// SessionServed reports whether a record of the session other than an
	// agent-reported one exists: agentotel then drops the agent's reports
	// of it, which would count the same requests twice.
	// Only records since since are looked at: the time index bounds the
	// scan, and a coding session does not outlive a day or two.
	SessionServed(ctx context.Context, sessionID string, since time.Time) (bool, error)
}

func (s *sqlStore) SessionServed(ctx context.Context, sessionID string, since time.Time) (bool, error) {
	q := `SELECT 1 FROM usage_records WHERE ts_us >= ` + s.d.placeholder(1) + ` AND session_id = ` + s.d.placeholder(2) +
		` AND endpoint <> 'agent_reported' LIMIT 1`
	var one int
	err := s.db.QueryRowContext(ctx, q, since.UnixMicro(), sessionID).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger session served: %w", err)
	}
	return true, nil
}
