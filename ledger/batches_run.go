package ledger

import (
	"context"
	"time"
)

// The running side of BatchStore: leases on items, ends, expiry and
// retention. Every statement is safe with several instances on one
// database: a claim re-checks the row it takes, so two claims that chose
// the same item find it taken once the first commits.

func (s *sqlStore) ClaimBatchItems(ctx context.Context, site, owner string, now, until time.Time, n int) ([]BatchItem, error) {
	p := s.d.placeholder
	runnable := func(a int) string {
		return `(state = 'pending' AND not_before_us <= ` + p(a) + `) OR (state = 'running' AND lease_until_us < ` + p(a+1) + `)`
	}
	lock := ""
	if s.d.name == "postgres" {
		// Skip rows another instance is claiming rather than queue on
		// them; SQLite has one writer at a time and needs no such clause.
		lock = ` FOR UPDATE SKIP LOCKED`
	}
	// Items by their place in their batch, then age: batches share the
	// workers (a small batch is not queued behind a large one's tail),
	// each in input order.
	// The pick is materialized: as a plain IN (subquery), PostgreSQL may
	// run the subquery again for each row it scans, and its LIMIT then
	// bounds nothing (a claim of 2 took 200).
	// Placeholders in the order they appear: SQLite's are positional.
	t := us(now)
	// Only the site's own items: another site's run on its own keys and
	// models.
	rows, err := s.db.QueryContext(ctx, `WITH picked AS MATERIALIZED (SELECT id FROM batch_items WHERE site = `+p(1)+` AND (`+runnable(2)+`) ORDER BY seq, not_before_us LIMIT `+p(4)+lock+`)
UPDATE batch_items SET state = 'running', lease_until_us = `+p(5)+`, owner = `+p(6)+`, attempts = attempts + 1
WHERE id IN (SELECT id FROM picked) AND (`+runnable(7)+`)
RETURNING id, batch_id, custom_id, seq, body`, site, t, t, n, us(until), owner, t, t)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BatchItem
	for rows.Next() {
		it := BatchItem{State: ItemRunning}
		var body string
		if err := rows.Scan(&it.ID, &it.BatchID, &it.CustomID, &it.Seq, &body); err != nil {
			return nil, err
		}
		it.Body = []byte(body)
		out = append(out, it)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	return out, s.fillClaimed(ctx, out)
}

// fillClaimed adds to each claimed item what its batch says of it.
func (s *sqlStore) fillClaimed(ctx context.Context, items []BatchItem) error {
	type info struct {
		site, key, endpoint string
		exp, cancel         int64
	}
	seen := map[string]info{}
	for i := range items {
		in, ok := seen[items[i].BatchID]
		if !ok {
			if err := s.db.QueryRowContext(ctx, `SELECT site, key_id, endpoint, expires_us, cancel_us FROM batches WHERE id = `+s.d.placeholder(1),
				items[i].BatchID).Scan(&in.site, &in.key, &in.endpoint, &in.exp, &in.cancel); err != nil {
				return err
			}
			seen[items[i].BatchID] = in
		}
		items[i].Site, items[i].KeyID, items[i].Endpoint = in.site, in.key, in.endpoint
		items[i].Expires, items[i].Cancelled = fromUS(in.exp), fromUS(in.cancel)
	}
	return nil
}

func (s *sqlStore) RenewBatchItems(ctx context.Context, owner string, ids []string, until time.Time) error {
	p := s.d.placeholder
	for _, id := range ids {
		if _, err := s.db.ExecContext(ctx, `UPDATE batch_items SET lease_until_us = `+p(1)+` WHERE id = `+p(2)+` AND owner = `+p(3)+` AND state = 'running'`,
			us(until), id, owner); err != nil {
			return err
		}
	}
	return nil
}

func (s *sqlStore) FinishBatchItem(ctx context.Context, owner string, it BatchItem) error {
	p := s.d.placeholder
	_, err := s.db.ExecContext(ctx, `UPDATE batch_items SET state = `+p(1)+`, status_code = `+p(2)+`, result = `+p(3)+`, lease_until_us = 0
WHERE id = `+p(4)+` AND owner = `+p(5)+` AND state = 'running'`, it.State, it.StatusCode, string(it.Result), it.ID, owner)
	return err
}

func (s *sqlStore) ReleaseBatchItem(ctx context.Context, owner, id string, notBefore time.Time) error {
	p := s.d.placeholder
	_, err := s.db.ExecContext(ctx, `UPDATE batch_items SET state = 'pending', not_before_us = `+p(1)+`, lease_until_us = 0
WHERE id = `+p(2)+` AND owner = `+p(3)+` AND state = 'running'`, us(notBefore), id, owner)
	return err
}

func (s *sqlStore) ExpireBatches(ctx context.Context, now time.Time) ([]Batch, error) {
	p := s.d.placeholder
	if _, err := s.db.ExecContext(ctx, `UPDATE batch_items SET state = 'expired' WHERE state = 'pending' AND batch_id IN
	(SELECT id FROM batches WHERE ended_us = 0 AND expires_us <= `+p(1)+`)`, us(now)); err != nil {
		return nil, err
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+batchColumns+` FROM batches b WHERE ended_us = 0 AND NOT EXISTS
	(SELECT 1 FROM batch_items i WHERE i.batch_id = b.id AND i.state IN ('pending', 'running', 'provider'))`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Batch
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

func (s *sqlStore) EndBatch(ctx context.Context, id string, now time.Time, files []BatchFile) (bool, error) {
	p := s.d.placeholder
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `UPDATE batches SET ended_us = `+p(1)+` WHERE id = `+p(2)+` AND ended_us = 0`, us(now), id)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	for _, f := range files {
		if err := s.insertBatchFile(ctx, tx, f); err != nil {
			return false, err
		}
	}
	return true, tx.Commit()
}

func (s *sqlStore) PurgeBatches(ctx context.Context, before, now time.Time) (int64, error) {
	p := s.d.placeholder
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	cut := us(before)
	if _, err := tx.ExecContext(ctx, `DELETE FROM batch_items WHERE batch_id IN
	(SELECT id FROM batches WHERE ended_us > 0 AND ended_us < `+p(1)+`)`, cut); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM batches WHERE ended_us > 0 AND ended_us < `+p(1), cut)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if _, err := tx.ExecContext(ctx, `DELETE FROM batch_passthrough WHERE settled_us > 0 AND settled_us < `+p(1), cut); err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM batch_files WHERE expires_us > 0 AND expires_us <= `+p(1), us(now)); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
