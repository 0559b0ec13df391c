package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// workMigration creates the work tables. A session's context rows are
// kept per change (a new row only when the repository, branch or head
// moves), so a session that switches branch is split at the switch when
// the report joins each record to the row in force at its time.
const workMigration = `CREATE TABLE work_contexts (
	key_id TEXT NOT NULL,
	session_id TEXT NOT NULL,
	at_us BIGINT NOT NULL,
	repo TEXT NOT NULL,
	branch TEXT NOT NULL,
	head TEXT NOT NULL,
	PRIMARY KEY (key_id, session_id, at_us)
);
CREATE TABLE work_pulls (
	repo TEXT NOT NULL,
	number BIGINT NOT NULL,
	forge TEXT NOT NULL,
	branch TEXT NOT NULL,
	title TEXT NOT NULL,
	author TEXT NOT NULL,
	state TEXT NOT NULL,
	url TEXT NOT NULL,
	opened_us BIGINT NOT NULL,
	merged_us BIGINT NOT NULL,
	closed_us BIGINT NOT NULL,
	updated_us BIGINT NOT NULL,
	commented_us BIGINT NOT NULL,
	PRIMARY KEY (repo, number)
);
CREATE INDEX work_pulls_branch ON work_pulls (repo, branch);
CREATE TABLE work_deliveries (
	forge TEXT NOT NULL,
	id TEXT NOT NULL,
	at_us BIGINT NOT NULL,
	PRIMARY KEY (forge, id)
)`

// WorkContext is what a coding session was working on from Time on: the
// repository (normalised, never with credentials), the branch and its
// head commit, as the agent's hook or the client's headers said.
type WorkContext struct {
	KeyID, SessionID   string
	Time               time.Time
	Repo, Branch, Head string
}

// Pull request states.
const (
	PullOpen   = "open"
	PullMerged = "merged"
	PullClosed = "closed"
)

// Pull is a forge's pull (GitHub) or merge (GitLab) request.
type Pull struct {
	Forge                             string // github, gitlab
	Repo                              string // normalised like WorkContext.Repo
	Number                            int64
	Branch, Title, Author, State, URL string
	// OpenedAt is when it was opened; MergedAt and ClosedAt are zero
	// until then; UpdatedAt orders the forge's deliveries, so a late
	// older event never overwrites a newer state.
	OpenedAt, MergedAt, ClosedAt, UpdatedAt time.Time
	// CommentedAt is when the gateway commented its cost; zero: never.
	CommentedAt time.Time
}

// WorkStore keeps work contexts, pull requests and forge deliveries.
type WorkStore interface {
	// PutWorkContext records c unless the session's latest context at or
	// before c.Time already says the same.
	PutWorkContext(ctx context.Context, c WorkContext) error
	// PutPull writes p unless the stored request is newer (UpdatedAt).
	PutPull(ctx context.Context, p Pull) error
	// ClaimDelivery records a forge delivery id; false: it was seen before
	// (a replay).
	ClaimDelivery(ctx context.Context, forge, id string, at time.Time) (bool, error)
	// Pulls returns the pull requests of the repositories (all when repos
	// is empty).
	Pulls(ctx context.Context, repos []string) ([]Pull, error)
	// MarkCommented claims the comment on a pull request: true for the
	// first caller only, so a comment is posted once across instances.
	MarkCommented(ctx context.Context, repo string, number int64, at time.Time) (bool, error)
	// UnmarkCommented gives the claim back after a comment failed.
	UnmarkCommented(ctx context.Context, repo string, number int64) error
	// WorkRows sums the records of f per bucket of width, key, workspace,
	// session and the work context in force at each record's time.
	WorkRows(ctx context.Context, f Filter, width time.Duration) ([]WorkRow, error)
}

// WorkRow is one bucket's records of one session under one context.
type WorkRow struct {
	Bucket                              time.Time
	KeyID, Workspace, SessionID         string
	Repo, Branch                        string // empty: no context (unattributed)
	First                               time.Time
	InputTokens, CacheWrite, CacheRead  int64
	OutputTokens, CostPicoUSD, Requests int64
}

func (s *sqlStore) PutWorkContext(ctx context.Context, c WorkContext) error {
	at := c.Time.UnixMicro()
	ph := s.d.placeholder
	var repo, branch, head string
	err := s.db.QueryRowContext(ctx, `SELECT repo, branch, head FROM work_contexts WHERE key_id = `+ph(1)+
		` AND session_id = `+ph(2)+` AND at_us <= `+ph(3)+` ORDER BY at_us DESC LIMIT 1`, c.KeyID, c.SessionID, at).Scan(&repo, &branch, &head)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return fmt.Errorf("ledger work context: %w", err)
	case repo == c.Repo && branch == c.Branch && head == c.Head:
		return nil
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO work_contexts (key_id, session_id, at_us, repo, branch, head) VALUES (`+
		ph(1)+`, `+ph(2)+`, `+ph(3)+`, `+ph(4)+`, `+ph(5)+`, `+ph(6)+`) ON CONFLICT (key_id, session_id, at_us) DO UPDATE SET
		repo = excluded.repo, branch = excluded.branch, head = excluded.head`,
		c.KeyID, c.SessionID, at, c.Repo, c.Branch, c.Head)
	if err != nil {
		return fmt.Errorf("ledger work context: %w", err)
	}
	return nil
}

func (s *sqlStore) PutPull(ctx context.Context, p Pull) error {
	var args []any
	ph := func(v any) string {
		args = append(args, v)
		return s.d.placeholder(len(args))
	}
	q := `INSERT INTO work_pulls (repo, number, forge, branch, title, author, state, url, opened_us, merged_us, closed_us, updated_us, commented_us) VALUES (` +
		ph(p.Repo) + `, ` + ph(p.Number) + `, ` + ph(p.Forge) + `, ` + ph(p.Branch) + `, ` + ph(p.Title) + `, ` + ph(p.Author) + `, ` +
		ph(p.State) + `, ` + ph(p.URL) + `, ` + ph(micros(p.OpenedAt)) + `, ` + ph(micros(p.MergedAt)) + `, ` + ph(micros(p.ClosedAt)) + `, ` +
		ph(micros(p.UpdatedAt)) + `, 0)
	ON CONFLICT (repo, number) DO UPDATE SET forge = excluded.forge, branch = excluded.branch, title = excluded.title,
		author = excluded.author, state = excluded.state, url = excluded.url, opened_us = excluded.opened_us,
		merged_us = excluded.merged_us, closed_us = excluded.closed_us, updated_us = excluded.updated_us
	WHERE work_pulls.updated_us <= excluded.updated_us`
	if _, err := s.db.ExecContext(ctx, q, args...); err != nil {
		return fmt.Errorf("ledger pull request: %w", err)
	}
	return nil
}

func (s *sqlStore) ClaimDelivery(ctx context.Context, forge, id string, at time.Time) (bool, error) {
	ph := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `INSERT INTO work_deliveries (forge, id, at_us) VALUES (`+ph(1)+`, `+ph(2)+`, `+ph(3)+
		`) ON CONFLICT (forge, id) DO NOTHING`, forge, id, at.UnixMicro())
	if err != nil {
		return false, fmt.Errorf("ledger forge delivery: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *sqlStore) MarkCommented(ctx context.Context, repo string, number int64, at time.Time) (bool, error) {
	ph := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `UPDATE work_pulls SET commented_us = `+ph(1)+` WHERE repo = `+ph(2)+
		` AND number = `+ph(3)+` AND commented_us = 0`, at.UnixMicro(), repo, number)
	if err != nil {
		return false, fmt.Errorf("ledger pull request comment: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *sqlStore) UnmarkCommented(ctx context.Context, repo string, number int64) error {
	ph := s.d.placeholder
	if _, err := s.db.ExecContext(ctx, `UPDATE work_pulls SET commented_us = 0 WHERE repo = `+ph(1)+` AND number = `+ph(2), repo, number); err != nil {
		return fmt.Errorf("ledger pull request comment: %w", err)
	}
	return nil
}

func (s *sqlStore) Pulls(ctx context.Context, repos []string) ([]Pull, error) {
	var q strings.Builder
	q.WriteString(`SELECT repo, number, forge, branch, title, author, state, url, opened_us, merged_us, closed_us, updated_us, commented_us FROM work_pulls WHERE 1 = 1`)
	args := s.appendIn(&q, nil, "repo", repos, false)
	q.WriteString(` ORDER BY repo, number`)
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger pull requests: %w", err)
	}
	defer rows.Close()
	var out []Pull
	for rows.Next() {
		var p Pull
		var opened, merged, closed, updated, commented int64
		if err := rows.Scan(&p.Repo, &p.Number, &p.Forge, &p.Branch, &p.Title, &p.Author, &p.State, &p.URL,
			&opened, &merged, &closed, &updated, &commented); err != nil {
			return nil, fmt.Errorf("ledger pull requests: %w", err)
		}
		p.OpenedAt, p.MergedAt, p.ClosedAt = fromMicros(opened), fromMicros(merged), fromMicros(closed)
		p.UpdatedAt, p.CommentedAt = fromMicros(updated), fromMicros(commented)
		out = append(out, p)
	}
	return out, rows.Err()
}

// WorkRows joins each record to its session's context in force at the
// record's time (the latest at or before it; a record before the first
// context takes the first, since a hook reports a session's work as it
// starts). The join happens here, when a report is read, so serving a
// request writes nothing but its record.
func (s *sqlStore) WorkRows(ctx context.Context, f Filter, width time.Duration) ([]WorkRow, error) {
	w := width.Microseconds()
	if w <= 0 {
		return nil, fmt.Errorf("ledger work report: bucket width %v", width)
	}
	sum := func(col string, bound int64) string {
		v := s.d.least + "(" + s.d.greatest + "(" + col + ", 0), " + fmt.Sprint(bound) + ")"
		if s.d.name == "postgres" {
			return "CAST(LEAST(SUM(" + v + "), 9223372036854775807) AS BIGINT)"
		}
		return "CAST(SUM(" + v + ") AS BIGINT)"
	}
	// Each context holds from its time to the session's next one (the
	// first from the beginning): a range join, one pass over the records.
	var q strings.Builder
	q.WriteString(`WITH c AS (SELECT key_id, session_id, repo, branch,
		CASE WHEN LAG(at_us) OVER w IS NULL THEN -9223372036854775807 ELSE at_us END AS from_us,
		COALESCE(LEAD(at_us) OVER w, 9223372036854775807) AS to_us
		FROM work_contexts WINDOW w AS (PARTITION BY key_id, session_id ORDER BY at_us))
	SELECT r.bucket, r.key_id, r.workspace, r.session_id, COALESCE(c.repo, ''), COALESCE(c.branch, ''), MIN(r.ts_us), ` +
		sum("r.input_tokens", MaxTokens) + `, ` + sum("r.cache_creation_5m + r.cache_creation_1h", MaxTokens) + `, ` +
		sum("r.cache_read_tokens", MaxTokens) + `, ` + sum("r.output_tokens", MaxTokens) + `, ` + sum("r.cost_pico", MaxCost) + `, ` +
		`SUM(CASE WHEN r.used THEN 1 ELSE 0 END)
	FROM (SELECT ts_us - ts_us % ` + fmt.Sprint(w) + ` AS bucket, ts_us, key_id, workspace, session_id, input_tokens,
		cache_creation_5m, cache_creation_1h, cache_read_tokens, output_tokens, cost_pico, ` + usedTokensSQL + ` AS used FROM usage_records`)
	args := s.where(&q, nil, f)
	q.WriteString(`) r
	LEFT JOIN c ON r.session_id <> '' AND c.key_id = r.key_id AND c.session_id = r.session_id AND r.ts_us >= c.from_us AND r.ts_us < c.to_us
	GROUP BY r.bucket, r.key_id, r.workspace, r.session_id, c.repo, c.branch
	ORDER BY r.bucket, r.key_id, r.session_id`)
	rows, err := s.db.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("ledger work report: %w", err)
	}
	defer rows.Close()
	var out []WorkRow
	for rows.Next() {
		var r WorkRow
		var bucket, first int64
		if err := rows.Scan(&bucket, &r.KeyID, &r.Workspace, &r.SessionID, &r.Repo, &r.Branch, &first,
			&r.InputTokens, &r.CacheWrite, &r.CacheRead, &r.OutputTokens, &r.CostPicoUSD, &r.Requests); err != nil {
			return nil, fmt.Errorf("ledger work report: %w", err)
		}
		r.Bucket, r.First = time.UnixMicro(bucket).UTC(), time.UnixMicro(first).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

// purgeWork deletes, with the records before cut (Unix microseconds),
// what only they needed: the forge deliveries and agent metrics of that
// time, a session's contexts before cut that a later one before cut
// replaced, and any context 30 days older than cut (a session still
// working a month past the retention is attributed from its next prompt).
func (s *sqlStore) purgeWork(ctx context.Context, cut int64) error {
	ph := s.d.placeholder
	for _, q := range []struct {
		sql  string
		args []any
	}{
		{`DELETE FROM work_deliveries WHERE at_us < ` + ph(1), []any{cut}},
		{`DELETE FROM agent_metrics WHERE ts_us < ` + ph(1), []any{cut}},
		{`DELETE FROM work_contexts WHERE at_us < ` + ph(1) + ` AND (at_us < ` + ph(2) + ` OR EXISTS (SELECT 1 FROM work_contexts c2
			WHERE c2.key_id = work_contexts.key_id AND c2.session_id = work_contexts.session_id
			AND c2.at_us > work_contexts.at_us AND c2.at_us < ` + ph(3) + `))`, []any{cut, cut - (30 * 24 * time.Hour).Microseconds(), cut}},
	} {
		if _, err := s.db.ExecContext(ctx, q.sql, q.args...); err != nil {
			return fmt.Errorf("purging work contexts: %w", err)
		}
	}
	return nil
}
