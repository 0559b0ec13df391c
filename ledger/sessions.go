package ledger

import (
	"context"
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
		` FROM usage_records`)
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
			&r.UncachedInput, &r.CacheCreation, &r.CacheRead, &r.Output, &r.CostPico); err != nil {
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
