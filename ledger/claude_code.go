package ledger

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ClaudeCodeRow is one key's Claude Code use on one day, for the
// claude_code report: sessions and tokens and cost per model.
type ClaudeCodeRow struct {
	KeyID    string
	Sessions int64
	Models   []ClaudeCodeModel
}

// ClaudeCodeModel is one model's share of a ClaudeCodeRow.
type ClaudeCodeModel struct {
	Model                                  string
	Uncached, Output, CacheRead, CacheMade int64
	CostPico                               int64
}

// ClaudeCodeReporter answers the claude_code report from the ledger.
type ClaudeCodeReporter interface {
	// ClaudeCodeDay is the Claude Code traffic (agent claude-code) of the
	// UTC day holding day, per key in key order; keys filters when not
	// empty.
	ClaudeCodeDay(ctx context.Context, day time.Time, keys []string) ([]ClaudeCodeRow, error)
	// OrganizationID is a UUID fixed for the ledger database.
	OrganizationID(ctx context.Context) (string, error)
}

func (s *sqlStore) ClaudeCodeDay(ctx context.Context, day time.Time, keys []string) ([]ClaudeCodeRow, error) {
	start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
	f := Filter{From: start, To: start.Add(24 * time.Hour), APIKeyIDs: keys}
	sum := func(col string, bound int64) string {
		v := s.d.least + "(" + s.d.greatest + "(" + col + ", 0), " + strconv.FormatInt(bound, 10) + ")"
		if s.d.name == "postgres" {
			return "CAST(LEAST(SUM(" + v + "), 9223372036854775807) AS BIGINT)"
		}
		return "CAST(SUM(" + v + ") AS BIGINT)"
	}
	var q strings.Builder
	q.WriteString(`SELECT key_id, alias, ` + sum("input_tokens", MaxTokens) + `, ` + sum("output_tokens", MaxTokens) + `, ` +
		sum("cache_read_tokens", MaxTokens) + `, ` + sum("cache_creation_5m + cache_creation_1h", MaxTokens) + `, ` + sum("cost_pico", MaxCost) +
		` FROM usage_records`)
	args := s.where(&q, nil, f)
	q.WriteString(` AND agent = 'claude-code' AND outcome <> 'refused' GROUP BY key_id, alias ORDER BY key_id, alias`)
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger claude_code: %w", err)
	}
	var out []ClaudeCodeRow
	index := map[string]int{}
	for rows.Next() {
		var key string
		var m ClaudeCodeModel
		if err := rows.Scan(&key, &m.Model, &m.Uncached, &m.Output, &m.CacheRead, &m.CacheMade, &m.CostPico); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger claude_code: %w", err)
		}
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, ClaudeCodeRow{KeyID: key})
		}
		out[i].Models = append(out[i].Models, m)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	q.Reset()
	q.WriteString(`SELECT key_id, COUNT(DISTINCT session_id) FROM usage_records`)
	args = s.where(&q, nil, f)
	q.WriteString(` AND agent = 'claude-code' AND session_id <> '' AND outcome <> 'refused' GROUP BY key_id`)
	rows, err = s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger claude_code: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var n int64
		if err := rows.Scan(&key, &n); err != nil {
			return nil, err
		}
		if i, ok := index[key]; ok {
			out[i].Sessions = n
		}
	}
	return out, rows.Err()
}

func (s *sqlStore) OrganizationID(ctx context.Context) (string, error) {
	// When the database was first migrated: fixed for its life, different
	// for every gateway's database.
	var us int64
	if err := s.db.QueryRowContext(ctx, `SELECT applied_at_us FROM schema_migrations WHERE version = 1`).Scan(&us); err != nil {
		return "", err
	}
	h := sha256.Sum256([]byte("modelgate organization " + strconv.FormatInt(us, 10)))
	h[6] = h[6]&0x0f | 0x40 // version 4 layout
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]), nil
}
