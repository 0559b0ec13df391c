package ledger

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// agentMetricsMigration keeps coding agents' own counts of their work
// (Claude Code's lines of code, commits, pull requests and edit tool
// decisions), one row per series: a cumulative series' latest total, or
// one delta point, so that an exporter's retry changes nothing.
const agentMetricsMigration = `CREATE TABLE agent_metrics (
	key_id TEXT NOT NULL,
	session_id TEXT NOT NULL,
	metric TEXT NOT NULL,
	attr TEXT NOT NULL,
	series_us BIGINT NOT NULL,
	ts_us BIGINT NOT NULL,
	terminal TEXT NOT NULL,
	value BIGINT NOT NULL,
	PRIMARY KEY (key_id, session_id, metric, attr, series_us)
);
CREATE INDEX agent_metrics_time ON agent_metrics (ts_us)`

// AgentMetric is one point of an agent's work metric.
type AgentMetric struct {
	SessionID, Terminal string
	// Metric is the agent's metric name; Attr what distinguishes its
	// series ("added", "Edit:accept"), or "".
	Metric, Attr string
	// Series identifies the point's series: a cumulative series' start,
	// a delta point's own time.
	Series, Time time.Time
	Value        int64
}

// MetricSessions names the AgentMetricsDay row counting a key's sessions.
const MetricSessions = "sessions"

// AgentMetricRow is one key's sum of one metric and attribute on a day.
type AgentMetricRow struct {
	KeyID, Metric, Attr, Terminal string
	Value                         int64
}

// AgentMetricStore keeps agents' work metrics.
type AgentMetricStore interface {
	// PutAgentMetrics records points under the key that exported them.
	PutAgentMetrics(ctx context.Context, keyID string, pts []AgentMetric) error
	// AgentMetricsDay sums the points of the UTC day holding day per key,
	// metric and attribute; keys filters when not empty.
	AgentMetricsDay(ctx context.Context, day time.Time, keys []string) ([]AgentMetricRow, error)
}

func (s *sqlStore) PutAgentMetrics(ctx context.Context, keyID string, pts []AgentMetric) error {
	if len(pts) == 0 {
		return nil
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ledger agent metrics: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	ph := s.d.placeholder
	q := `INSERT INTO agent_metrics (key_id, session_id, metric, attr, series_us, ts_us, terminal, value) VALUES (` +
		ph(1) + `, ` + ph(2) + `, ` + ph(3) + `, ` + ph(4) + `, ` + ph(5) + `, ` + ph(6) + `, ` + ph(7) + `, ` + ph(8) + `)
	ON CONFLICT (key_id, session_id, metric, attr, series_us) DO UPDATE SET
		value = ` + s.d.greatest + `(agent_metrics.value, excluded.value), ts_us = ` + s.d.greatest + `(agent_metrics.ts_us, excluded.ts_us),
		terminal = excluded.terminal`
	for _, p := range pts {
		if _, err := tx.ExecContext(ctx, q, keyID, p.SessionID, p.Metric, p.Attr, p.Series.UnixMicro(), p.Time.UnixMicro(), p.Terminal, p.Value); err != nil {
			return fmt.Errorf("ledger agent metrics: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ledger agent metrics: %w", err)
	}
	return nil
}

func (s *sqlStore) AgentMetricsDay(ctx context.Context, day time.Time, keys []string) ([]AgentMetricRow, error) {
	start := time.Date(day.Year(), day.Month(), day.Day(), 0, 0, 0, 0, time.UTC)
	args := []any{start.UnixMicro(), start.Add(24 * time.Hour).UnixMicro()}
	var q strings.Builder
	q.WriteString(`SELECT key_id, metric, attr, MAX(terminal), CAST(SUM(value) AS BIGINT) FROM agent_metrics WHERE ts_us >= ` +
		s.d.placeholder(1) + ` AND ts_us < ` + s.d.placeholder(2))
	args = s.appendIn(&q, args, "key_id", keys, false)
	q.WriteString(` GROUP BY key_id, metric, attr`)
	// And each key's sessions, which a seat that exports metrics alone
	// shows nowhere else.
	q.WriteString(` UNION ALL SELECT key_id, '` + MetricSessions + `', '', MAX(terminal), COUNT(DISTINCT session_id) FROM agent_metrics WHERE ts_us >= ` +
		s.d.placeholder(len(args)+1) + ` AND ts_us < ` + s.d.placeholder(len(args)+2))
	args = append(args, args[0], args[1])
	args = s.appendIn(&q, args, "key_id", keys, false)
	q.WriteString(` GROUP BY key_id ORDER BY 1, 2, 3`)
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger agent metrics: %w", err)
	}
	defer rows.Close()
	var out []AgentMetricRow
	for rows.Next() {
		var r AgentMetricRow
		if err := rows.Scan(&r.KeyID, &r.Metric, &r.Attr, &r.Terminal, &r.Value); err != nil {
			return nil, fmt.Errorf("ledger agent metrics: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
