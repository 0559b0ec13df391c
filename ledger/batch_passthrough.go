package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// BatchPassthrough is a batch sent to its provider's own batch API
// (Anthropic Message Batches, OpenAI Batch): the gateway's batch and its
// items are stored as for any batch, its items in ItemAtProvider, and
// this row says where the batch runs and what it holds of the caller's
// budgets, so that any instance answers for it and exactly one settles
// it.
type BatchPassthrough struct {
	BatchID, Site, KeyID string
	// Provider is the batch API: "anthropic" or "openai".
	Provider string
	// Upstream names the deployment's upstream (its kind, base URL and a
	// fingerprint of its credential, never the credential), so any
	// instance finds a deployment that reaches the same account.
	Upstream                        string
	ProviderBatchID, ProviderFileID string
	// Models are the batch's aliases with their upstream models and batch
	// prices, as the batch package writes them.
	Models json.RawMessage
	// HoldTicket and HoldPico are the whole batch's budget reservation:
	// its worst case, held until the batch settles.
	HoldTicket uint64
	HoldPico   int64
	// Status and Counts are the provider's, as last polled.
	Status  string
	Counts  json.RawMessage
	Polled  time.Time
	Settled time.Time
}

// BatchPassthroughStore keeps passed-through batches.
type BatchPassthroughStore interface {
	// CreatePassthroughBatch stores b, its items (all ItemAtProvider) and
	// p in one transaction.
	CreatePassthroughBatch(ctx context.Context, b Batch, items []BatchItem, p BatchPassthrough) error
	// GetPassthrough is batch id's row, or ErrBatchNotFound for a batch
	// the gateway runs itself.
	GetPassthrough(ctx context.Context, id string) (BatchPassthrough, error)
	// NotePassthrough keeps what a poll of the provider saw.
	NotePassthrough(ctx context.Context, id, status string, counts json.RawMessage, polled time.Time) error
	// OpenPassthroughs are site's batches not settled yet.
	OpenPassthroughs(ctx context.Context, site string) ([]BatchPassthrough, error)
	// LeasePassthrough gives owner the settlement of batch id until
	// until, if it is not settled and no other owner's lease is live.
	LeasePassthrough(ctx context.Context, id, owner string, now, until time.Time) (bool, error)
	// SettlePassthrough ends batch id in one transaction, once, if owner
	// still holds its lease: its items' answers, the batch ended with
	// files, recs written with their spend (the first carrying the hold's
	// ticket, which ends the reservation). False: settled already or
	// the lease was lost.
	SettlePassthrough(ctx context.Context, id, owner string, items []BatchItem, recs []Record, files []BatchFile, now time.Time) (bool, error)
	// DropHold ends a hold whose batch was never stored (the provider
	// refused it, or storing failed).
	DropHold(ctx context.Context, ticket uint64) error
}

var _ BatchPassthroughStore = (*sqlStore)(nil)

// batchPassthroughMigration creates the table of passed-through batches.
const batchPassthroughMigration = `CREATE TABLE batch_passthrough (
	batch_id TEXT PRIMARY KEY,
	site TEXT NOT NULL,
	key_id TEXT NOT NULL,
	provider TEXT NOT NULL,
	upstream TEXT NOT NULL,
	provider_batch_id TEXT NOT NULL,
	provider_file_id TEXT NOT NULL,
	models TEXT NOT NULL,
	hold_ticket BIGINT NOT NULL,
	hold_pico BIGINT NOT NULL,
	status TEXT NOT NULL,
	counts TEXT NOT NULL,
	polled_us BIGINT NOT NULL,
	lease_owner TEXT NOT NULL,
	lease_until_us BIGINT NOT NULL,
	settled_us BIGINT NOT NULL
);
CREATE INDEX batch_passthrough_open ON batch_passthrough (site, settled_us)`

const passthroughColumns = `batch_id, site, key_id, provider, upstream, provider_batch_id, provider_file_id, models, hold_ticket, hold_pico, status, counts, polled_us, settled_us`

func scanPassthrough(sc interface{ Scan(...any) error }) (BatchPassthrough, error) {
	var p BatchPassthrough
	var models, counts string
	var ticket, polled, settled int64
	err := sc.Scan(&p.BatchID, &p.Site, &p.KeyID, &p.Provider, &p.Upstream, &p.ProviderBatchID, &p.ProviderFileID, &models,
		&ticket, &p.HoldPico, &p.Status, &counts, &polled, &settled)
	p.Models, p.Counts = json.RawMessage(models), json.RawMessage(counts)
	p.HoldTicket, p.Polled, p.Settled = uint64(ticket), fromUS(polled), fromUS(settled)
	return p, err
}

func (s *sqlStore) CreatePassthroughBatch(ctx context.Context, b Batch, items []BatchItem, p BatchPassthrough) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.insertBatch(ctx, tx, b, items, ItemAtProvider); err != nil {
		return err
	}
	counts := string(p.Counts)
	if counts == "" {
		counts = "null"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO batch_passthrough (`+passthroughColumns+`, lease_owner, lease_until_us)
VALUES (`+s.ph(1, 14)+`, '', 0)`, p.BatchID, p.Site, p.KeyID, p.Provider, p.Upstream, p.ProviderBatchID, p.ProviderFileID,
		string(p.Models), int64(p.HoldTicket), p.HoldPico, p.Status, counts, us(p.Polled), int64(0)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) GetPassthrough(ctx context.Context, id string) (BatchPassthrough, error) {
	p, err := scanPassthrough(s.db.QueryRowContext(ctx, `SELECT `+passthroughColumns+` FROM batch_passthrough WHERE batch_id = `+s.d.placeholder(1), id))
	if errors.Is(err, sql.ErrNoRows) {
		return p, ErrBatchNotFound
	}
	return p, err
}

func (s *sqlStore) NotePassthrough(ctx context.Context, id, status string, counts json.RawMessage, polled time.Time) error {
	p := s.d.placeholder
	_, err := s.db.ExecContext(ctx, `UPDATE batch_passthrough SET status = `+p(1)+`, counts = `+p(2)+`, polled_us = `+p(3)+
		` WHERE batch_id = `+p(4)+` AND settled_us = 0`, status, string(counts), us(polled), id)
	return err
}

func (s *sqlStore) OpenPassthroughs(ctx context.Context, site string) ([]BatchPassthrough, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+passthroughColumns+` FROM batch_passthrough WHERE site = `+s.d.placeholder(1)+` AND settled_us = 0`, site)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BatchPassthrough
	for rows.Next() {
		p, err := scanPassthrough(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

func (s *sqlStore) LeasePassthrough(ctx context.Context, id, owner string, now, until time.Time) (bool, error) {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `UPDATE batch_passthrough SET lease_owner = `+p(1)+`, lease_until_us = `+p(2)+
		` WHERE batch_id = `+p(3)+` AND settled_us = 0 AND (lease_owner = `+p(4)+` OR lease_until_us <= `+p(5)+`)`,
		owner, us(until), id, owner, us(now))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *sqlStore) SettlePassthrough(ctx context.Context, id, owner string, items []BatchItem, recs []Record, files []BatchFile, now time.Time) (bool, error) {
	p := s.d.placeholder
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	// First, so that a second settler waits on this row and then finds
	// it settled.
	res, err := tx.ExecContext(ctx, `UPDATE batch_passthrough SET settled_us = `+p(1)+` WHERE batch_id = `+p(2)+
		` AND settled_us = 0 AND lease_owner = `+p(3), us(now), id, owner)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	for _, it := range items {
		if _, err := tx.ExecContext(ctx, `UPDATE batch_items SET state = `+p(1)+`, status_code = `+p(2)+`, result = `+p(3)+
			` WHERE id = `+p(4)+` AND batch_id = `+p(5), it.State, it.StatusCode, string(it.Result), it.ID, id); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE batches SET ended_us = `+p(1)+` WHERE id = `+p(2)+` AND ended_us = 0`, us(now), id); err != nil {
		return false, err
	}
	for _, f := range files {
		if err := s.insertBatchFile(ctx, tx, f); err != nil {
			return false, err
		}
	}
	if err := s.insertRecordsTx(ctx, tx, recs); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// insertRecordsTx writes recs inside tx with what every insert keeps
// beside them (spend, reservations ended, roll-ups), one row a
// statement: a batch's settlement is rare and must share its
// transaction, which COPY's connection-level path cannot.
func (s *sqlStore) insertRecordsTx(ctx context.Context, tx *sql.Tx, recs []Record) error {
	if len(recs) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx, insertOneSQL(s.d.placeholder))
	if err != nil {
		return err
	}
	defer stmt.Close()
	args := make([]any, 0, numRecordColumns)
	for i := range recs {
		if _, err := stmt.ExecContext(ctx, appendRecordArgs(args[:0], &recs[i])...); err != nil {
			return err
		}
	}
	if err := s.addSpend(ctx, tx, recs); err != nil {
		return err
	}
	if err := s.endReservations(ctx, tx, recs); err != nil {
		return err
	}
	return s.addRollup(ctx, tx, recs)
}

func (s *sqlStore) DropHold(ctx context.Context, ticket uint64) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM budget_reservations WHERE ticket = `+s.d.placeholder(1), int64(ticket))
	return err
}
