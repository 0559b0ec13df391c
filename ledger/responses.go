package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// StoredResponse is one Responses API response kept for later turns
// (store: true): previous_response_id, item_reference, GET and DELETE
// /v1/responses/{id} and its input_items.
type StoredResponse struct {
	ID         string // "resp_…"
	KeyID      string // the key that created it; every lookup is scoped to it
	PreviousID string // the previous_response_id it continued, "" if none
	Model      string // alias
	Created    time.Time
	// Input is this turn's input items (each with an id), not the chain
	// before it; Output the output items. Both are JSON arrays.
	Input, Output json.RawMessage
	// Response is the whole response object as the client got it.
	Response json.RawMessage
	// LeaseUntil is when a running background response's lease lapses
	// unless the instance running it renews it; zero: no lease.
	LeaseUntil time.Time
}

// ResponseStore keeps Responses API state in the ledger database, so that
// every gateway instance on it can continue any conversation.
type ResponseStore interface {
	// PutResponse stores r, or replaces the response of the same id and
	// key (a background response is stored queued and again when it
	// ends).
	PutResponse(ctx context.Context, r StoredResponse) error
	// GetResponse, DeleteResponse, ResponseChain and Item answer
	// ErrResponseNotFound for an id that is unknown or another key's.
	GetResponse(ctx context.Context, keyID, id string) (StoredResponse, error)
	DeleteResponse(ctx context.Context, keyID, id string) error
	// ResponseChain is the response and every one it continues, oldest
	// first, without Response bodies.
	ResponseChain(ctx context.Context, keyID, id string) ([]StoredResponse, error)
	// Item is one stored input or output item, by its own id.
	Item(ctx context.Context, keyID, itemID string) (json.RawMessage, error)
	// PurgeResponses deletes the responses and conversations created
	// before t and says how many went.
	PurgeResponses(ctx context.Context, before time.Time) (int64, error)
	// RenewResponse moves the lease of a running background response to
	// until.
	RenewResponse(ctx context.Context, keyID, id string, until time.Time) error
	// ReplaceLapsed replaces the Response of id with response and drops
	// its lease, only if its lease is still lease (no renewal came in
	// between); it reports whether it did.
	ReplaceLapsed(ctx context.Context, keyID, id string, lease time.Time, response json.RawMessage) (bool, error)
	// LapsedResponses are up to limit responses whose lease lapsed before
	// t, oldest lease first, with their ID, KeyID, Response and
	// LeaseUntil.
	LapsedResponses(ctx context.Context, t time.Time, limit int) ([]StoredResponse, error)
}

// ErrResponseNotFound says there is no such response or item for this key.
const ErrResponseNotFound = lookupError("response not found")

// lookupError is an error that is a fixed text, so it can be a constant.
type lookupError string

func (e lookupError) Error() string { return string(e) }

// MaxStoredResponse bounds what one stored response may hold: a client
// resending a huge history is served, but its state is not kept.
const MaxStoredResponse = 32 << 20

// maxChain bounds how far previous_response_id links are followed.
const maxChain = 10000

func (s *sqlStore) PutResponse(ctx context.Context, r StoredResponse) error {
	if n := len(r.Input) + len(r.Output) + len(r.Response); n > MaxStoredResponse {
		return fmt.Errorf("response %s is %d MiB, over the %d MiB a stored response may hold", r.ID, n>>20, MaxStoredResponse>>20)
	}
	var items []json.RawMessage
	for _, list := range []json.RawMessage{r.Input, r.Output} {
		var l []json.RawMessage
		if len(list) > 0 {
			if err := json.Unmarshal(list, &l); err != nil {
				return fmt.Errorf("response %s: items are not a JSON array: %w", r.ID, err)
			}
		}
		items = append(items, l...)
	}
	p := s.d.placeholder
	created := r.Created.UnixMicro()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `INSERT INTO responses (id, key_id, previous_id, model, created_us, input, output, response, lease_until_us)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`, `+p(7)+`, `+p(8)+`, `+p(9)+`)
ON CONFLICT (id) DO UPDATE SET previous_id = excluded.previous_id, model = excluded.model, input = excluded.input,
	output = excluded.output, response = excluded.response, lease_until_us = excluded.lease_until_us WHERE responses.key_id = excluded.key_id`,
		r.ID, r.KeyID, r.PreviousID, r.Model, created, string(orEmptyList(r.Input)), string(orEmptyList(r.Output)), string(r.Response),
		leaseMicros(r.LeaseUntil)); err != nil {
		return err
	}
	// An item replayed in a later turn (Codex resends ids) belongs to the
	// newest response that holds it.
	upsert := `INSERT INTO response_items (key_id, item_id, response_id, created_us, item)
VALUES (` + p(1) + `, ` + p(2) + `, ` + p(3) + `, ` + p(4) + `, ` + p(5) + `)
ON CONFLICT (key_id, item_id) DO UPDATE SET response_id = excluded.response_id, created_us = excluded.created_us, item = excluded.item`
	for _, it := range items {
		var head struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(it, &head) != nil || head.ID == "" {
			continue
		}
		if _, err := tx.ExecContext(ctx, upsert, r.KeyID, head.ID, r.ID, created, string(it)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

func orEmptyList(b json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(b)) == 0 {
		return json.RawMessage("[]")
	}
	return b
}

func (s *sqlStore) GetResponse(ctx context.Context, keyID, id string) (StoredResponse, error) {
	r := StoredResponse{ID: id, KeyID: keyID}
	var created, lease int64
	var input, output, response string
	if err := s.keyScopedRow(ctx, "responses", "previous_id, model, created_us, input, output, response, lease_until_us", keyID, id, ErrResponseNotFound,
		&r.PreviousID, &r.Model, &created, &input, &output, &response, &lease); err != nil {
		return r, err
	}
	r.Created = time.UnixMicro(created).UTC()
	if lease != 0 {
		r.LeaseUntil = time.UnixMicro(lease).UTC()
	}
	r.Input, r.Output, r.Response = json.RawMessage(input), json.RawMessage(output), json.RawMessage(response)
	return r, nil
}

// leaseMicros is a lease as stored: 0 for none.
func leaseMicros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func (s *sqlStore) RenewResponse(ctx context.Context, keyID, id string, until time.Time) error {
	p := s.d.placeholder
	_, err := s.db.ExecContext(ctx, `UPDATE responses SET lease_until_us = `+p(1)+` WHERE id = `+p(2)+` AND key_id = `+p(3),
		leaseMicros(until), id, keyID)
	return err
}

func (s *sqlStore) ReplaceLapsed(ctx context.Context, keyID, id string, lease time.Time, response json.RawMessage) (bool, error) {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `UPDATE responses SET response = `+p(1)+`, lease_until_us = 0
WHERE id = `+p(2)+` AND key_id = `+p(3)+` AND lease_until_us = `+p(4), string(response), id, keyID, leaseMicros(lease))
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

func (s *sqlStore) LapsedResponses(ctx context.Context, t time.Time, limit int) ([]StoredResponse, error) {
	p := s.d.placeholder
	rows, err := s.db.QueryContext(ctx, `SELECT id, key_id, response, lease_until_us FROM responses
WHERE lease_until_us > 0 AND lease_until_us < `+p(1)+` ORDER BY lease_until_us LIMIT `+p(2), t.UnixMicro(), limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StoredResponse
	for rows.Next() {
		var r StoredResponse
		var response string
		var lease int64
		if err := rows.Scan(&r.ID, &r.KeyID, &response, &lease); err != nil {
			return nil, err
		}
		r.Response, r.LeaseUntil = json.RawMessage(response), time.UnixMicro(lease).UTC()
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqlStore) DeleteResponse(ctx context.Context, keyID, id string) error {
	return s.keyScopedDelete(ctx, "responses", keyID, id, ErrResponseNotFound,
		`DELETE FROM response_items WHERE response_id = `+s.d.placeholder(1)+` AND key_id = `+s.d.placeholder(2), id, keyID)
}

// keyScopedRow scans the columns of the row of table with id that keyID
// owns. An id that is unknown, another key's, or one no row can hold (a
// NUL byte, invalid UTF-8: PostgreSQL refuses the query) is notFound,
// never a database error a client would retry.
func (s *sqlStore) keyScopedRow(ctx context.Context, table, columns, keyID, id string, notFound error, dest ...any) error {
	if !StorableText(id) {
		return notFound
	}
	p := s.d.placeholder
	err := s.db.QueryRowContext(ctx, `SELECT `+columns+` FROM `+table+` WHERE id = `+p(1)+` AND key_id = `+p(2), id, keyID).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound
	}
	return err
}

// keyScopedDelete deletes the row of table with id that keyID owns, and
// in the same transaction runs then (its dependent rows) with args;
// notFound as keyScopedRow.
func (s *sqlStore) keyScopedDelete(ctx context.Context, table, keyID, id string, notFound error, then string, args ...any) error {
	if !StorableText(id) {
		return notFound
	}
	p := s.d.placeholder
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `DELETE FROM `+table+` WHERE id = `+p(1)+` AND key_id = `+p(2), id, keyID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		if err != nil {
			return err
		}
		return notFound
	}
	if _, err := tx.ExecContext(ctx, then, args...); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) ResponseChain(ctx context.Context, keyID, id string) ([]StoredResponse, error) {
	p := s.d.placeholder
	if !StorableText(id) {
		return nil, ErrResponseNotFound
	}
	rows, err := s.db.QueryContext(ctx, `WITH RECURSIVE chain(id, previous_id, depth) AS (
	SELECT id, previous_id, 0 FROM responses WHERE id = `+p(1)+` AND key_id = `+p(2)+`
	UNION ALL
	SELECT r.id, r.previous_id, c.depth + 1 FROM responses r JOIN chain c ON r.id = c.previous_id
	WHERE r.key_id = `+p(3)+` AND c.depth < `+p(4)+`
)
SELECT r.id, r.previous_id, r.model, r.created_us, r.input, r.output FROM chain c JOIN responses r ON r.id = c.id
ORDER BY c.depth DESC`, id, keyID, keyID, maxChain)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []StoredResponse
	for rows.Next() {
		r := StoredResponse{KeyID: keyID}
		var created int64
		var input, output string
		if err := rows.Scan(&r.ID, &r.PreviousID, &r.Model, &created, &input, &output); err != nil {
			return nil, err
		}
		r.Created = time.UnixMicro(created).UTC()
		r.Input, r.Output = json.RawMessage(input), json.RawMessage(output)
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, ErrResponseNotFound
	}
	return out, nil
}

func (s *sqlStore) Item(ctx context.Context, keyID, itemID string) (json.RawMessage, error) {
	if !StorableText(itemID) {
		return nil, ErrResponseNotFound
	}
	var item string
	err := s.db.QueryRowContext(ctx, `SELECT item FROM response_items WHERE key_id = `+s.d.placeholder(1)+
		` AND item_id = `+s.d.placeholder(2), keyID, itemID).Scan(&item)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrResponseNotFound
	}
	return json.RawMessage(item), err
}

func (s *sqlStore) PurgeResponses(ctx context.Context, before time.Time) (int64, error) {
	cut := before.UnixMicro()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `DELETE FROM response_items WHERE created_us < `+s.d.placeholder(1), cut); err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM responses WHERE created_us < `+s.d.placeholder(1), cut)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	// Conversations are Responses state too and expire by the same rule:
	// created before the cut.
	if _, err := tx.ExecContext(ctx, `DELETE FROM conversation_items WHERE conversation_id IN
	(SELECT id FROM conversations WHERE created_us < `+s.d.placeholder(1)+`)`, cut); err != nil {
		return 0, err
	}
	res, err = tx.ExecContext(ctx, `DELETE FROM conversations WHERE created_us < `+s.d.placeholder(1), cut)
	if err != nil {
		return 0, err
	}
	c, _ := res.RowsAffected()
	return n + c, tx.Commit()
}
