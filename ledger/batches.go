package ledger

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Batch is one batch job (Anthropic Message Batches or OpenAI Batch): a
// set of requests the gateway runs on its own, kept in the ledger database
// so that every instance on it answers for the batch and runs its items.
type Batch struct {
	ID string
	// Site and KeyID are the site and key that created it; every lookup
	// is scoped to both (BatchOwner).
	Site, KeyID string
	// API is the wire family it was created in: "anthropic" or "openai".
	API string
	// Endpoint is the path every item is served as (/v1/messages,
	// /v1/chat/completions, …).
	Endpoint    string
	InputFileID string // OpenAI: the file the items were read from
	Created     time.Time
	Expires     time.Time // items not run by then end expired
	Cancelled   time.Time // zero: no cancel asked
	Ended       time.Time // zero: items still pending or running
	Metadata    json.RawMessage
	// OutputFileID and ErrorFileID are fixed at create; the files exist
	// once the batch ended.
	OutputFileID, ErrorFileID string
	Total                     int64
	Counts                    BatchCounts // filled by the reads
}

// BatchCounts tallies a batch's items by state.
type BatchCounts struct {
	Pending, Running, Succeeded, Errored, Canceled, Expired int64
}

// The states of a batch item.
const (
	ItemPending   = "pending"
	ItemRunning   = "running"
	ItemSucceeded = "succeeded"
	ItemErrored   = "errored"
	ItemCanceled  = "canceled"
	ItemExpired   = "expired"
	// ItemAtProvider is an item of a batch passed through to its
	// provider's batch API (batch_passthrough.go): no worker claims it;
	// the batch's settlement ends it. It counts as running.
	ItemAtProvider = "provider"
)

// BatchItem is one request of a batch and, once run, its answer.
type BatchItem struct {
	ID, BatchID, CustomID string
	Seq                   int64
	Body                  []byte
	State                 string
	StatusCode            int
	Result                []byte // the answer's body as the gateway served it
	// Attempts counts the claims of the item: more than one when a run
	// was refused for now by the key's limits, or its instance stopped.
	Attempts int64
	// Filled by ClaimBatchItems from the item's batch: whose it is, what
	// it is served as, and whether it should still run.
	Site, KeyID, Endpoint string
	Expires, Cancelled    time.Time
}

// BatchFile is a file of the Files API: an uploaded batch input, or a
// batch's output or error file written when it ended.
type BatchFile struct {
	ID, Site, KeyID, Purpose, Filename string
	Bytes                              int64
	Created, Expires                   time.Time
	Content                            []byte // only from BatchFileContent
}

// BatchOwner is whose batches and files a lookup sees: a key id is unique
// only within a site (its llm_auth), so rows are scoped to both.
type BatchOwner struct{ Site, KeyID string }

// Owner is whose b is.
func (b Batch) Owner() BatchOwner { return BatchOwner{Site: b.Site, KeyID: b.KeyID} }

// Owner is whose f is.
func (f BatchFile) Owner() BatchOwner { return BatchOwner{Site: f.Site, KeyID: f.KeyID} }

// BatchStore keeps batches, their items and files in the ledger database.
// Lookups of another owner's rows answer ErrBatchNotFound or
// ErrBatchFileNotFound, as for an unknown id.
type BatchStore interface {
	PutBatchFile(ctx context.Context, f BatchFile) error
	GetBatchFile(ctx context.Context, o BatchOwner, id string) (BatchFile, error)
	BatchFileContent(ctx context.Context, o BatchOwner, id string) (BatchFile, error)
	// ListBatchFiles is the owner's files, newest first, those created
	// before the file after (when not "") only.
	ListBatchFiles(ctx context.Context, o BatchOwner, purpose, after string, limit int) ([]BatchFile, error)
	DeleteBatchFile(ctx context.Context, o BatchOwner, id string) error

	// CreateBatch stores b and its items, all pending.
	CreateBatch(ctx context.Context, b Batch, items []BatchItem) error
	GetBatch(ctx context.Context, o BatchOwner, id string) (Batch, error)
	// ListBatches is the owner's batches of api, newest first: those older
	// than after, or newer than before, when set (Anthropic's after_id
	// and before_id, OpenAI's after).
	ListBatches(ctx context.Context, o BatchOwner, api, after, before string, limit int) ([]Batch, error)
	// CancelBatch asks b to stop: its pending items end canceled at once;
	// running ones finish.
	CancelBatch(ctx context.Context, o BatchOwner, id string, now time.Time) (Batch, error)
	// DeleteBatch removes an ended batch with its items; a batch not
	// ended answers ErrBatchRunning.
	DeleteBatch(ctx context.Context, o BatchOwner, id string) error
	// BatchItems is every item of the batch in input order, with results.
	BatchItems(ctx context.Context, batchID string) ([]BatchItem, error)

	// ClaimBatchItems leases up to n runnable items (pending and due, or
	// running under a lease that lapsed) to owner until until: two
	// instances never hold one item at once.
	// Only the items of site's batches are claimed.
	ClaimBatchItems(ctx context.Context, site, owner string, now, until time.Time, n int) ([]BatchItem, error)
	// RenewBatchItems moves the lease of owner's running items ids.
	RenewBatchItems(ctx context.Context, owner string, ids []string, until time.Time) error
	// FinishBatchItem stores an item's end, if owner still holds it.
	FinishBatchItem(ctx context.Context, owner string, it BatchItem) error
	// ReleaseBatchItem puts owner's item back to pending, due at notBefore.
	ReleaseBatchItem(ctx context.Context, owner, id string, notBefore time.Time) error
	// ExpireBatches ends expired the pending items of batches past their
	// expiry, and returns the open batches that have no item left to run.
	ExpireBatches(ctx context.Context, now time.Time) ([]Batch, error)
	// EndBatch marks b ended at now and stores its result files, once:
	// false when another instance ended it first.
	EndBatch(ctx context.Context, id string, now time.Time, files []BatchFile) (bool, error)
	// PurgeBatches deletes batches ended before before, with their items,
	// and files whose expiry passed by now.
	PurgeBatches(ctx context.Context, before, now time.Time) (int64, error)
}

// ErrBatchNotFound says there is no such batch for this key.
const ErrBatchNotFound = lookupError("batch not found")

// ErrBatchFileNotFound says there is no such file for this key.
const ErrBatchFileNotFound = lookupError("file not found")

// ErrBatchRunning refuses to delete a batch that has not ended.
const ErrBatchRunning = lookupError("batch has not ended")

var _ BatchStore = (*sqlStore)(nil)

func us(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromUS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

func (s *sqlStore) ph(from, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(s.d.placeholder(from + i))
	}
	return b.String()
}

func (s *sqlStore) PutBatchFile(ctx context.Context, f BatchFile) error {
	return s.insertBatchFile(ctx, s.db, f)
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func (s *sqlStore) insertBatchFile(ctx context.Context, db execer, f BatchFile) error {
	_, err := db.ExecContext(ctx, `INSERT INTO batch_files (id, site, key_id, purpose, filename, bytes, created_us, expires_us, content)
VALUES (`+s.ph(1, 9)+`)`, f.ID, f.Site, f.KeyID, f.Purpose, f.Filename, int64(len(f.Content)), us(f.Created), us(f.Expires), string(f.Content))
	return err
}

const batchFileColumns = `id, site, key_id, purpose, filename, bytes, created_us, expires_us`

func scanBatchFile(sc interface{ Scan(...any) error }, extra ...any) (BatchFile, error) {
	var f BatchFile
	var c, e int64
	err := sc.Scan(append([]any{&f.ID, &f.Site, &f.KeyID, &f.Purpose, &f.Filename, &f.Bytes, &c, &e}, extra...)...)
	f.Created, f.Expires = fromUS(c), fromUS(e)
	return f, err
}

func (s *sqlStore) GetBatchFile(ctx context.Context, o BatchOwner, id string) (BatchFile, error) {
	p := s.d.placeholder
	f, err := scanBatchFile(s.db.QueryRowContext(ctx, `SELECT `+batchFileColumns+` FROM batch_files WHERE id = `+p(1)+` AND site = `+p(2)+` AND key_id = `+p(3), id, o.Site, o.KeyID))
	if errors.Is(err, sql.ErrNoRows) {
		return f, ErrBatchFileNotFound
	}
	return f, err
}

func (s *sqlStore) BatchFileContent(ctx context.Context, o BatchOwner, id string) (BatchFile, error) {
	p := s.d.placeholder
	var content string
	f, err := scanBatchFile(s.db.QueryRowContext(ctx, `SELECT `+batchFileColumns+`, content FROM batch_files WHERE id = `+p(1)+` AND site = `+p(2)+` AND key_id = `+p(3), id, o.Site, o.KeyID), &content)
	if errors.Is(err, sql.ErrNoRows) {
		return f, ErrBatchFileNotFound
	}
	f.Content = []byte(content)
	return f, err
}

func (s *sqlStore) ListBatchFiles(ctx context.Context, o BatchOwner, purpose, after string, limit int) ([]BatchFile, error) {
	p := s.d.placeholder
	q := `SELECT ` + batchFileColumns + ` FROM batch_files WHERE site = ` + p(1) + ` AND key_id = ` + p(2)
	args := []any{o.Site, o.KeyID}
	if purpose != "" {
		args = append(args, purpose)
		q += ` AND purpose = ` + p(len(args))
	}
	if after != "" {
		args = append(args, after, o.Site, o.KeyID)
		q += ` AND (created_us, id) < (SELECT created_us, id FROM batch_files WHERE id = ` + p(len(args)-2) + ` AND site = ` + p(len(args)-1) + ` AND key_id = ` + p(len(args)) + `)`
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q+` ORDER BY created_us DESC, id DESC LIMIT `+p(len(args)), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BatchFile
	for rows.Next() {
		f, err := scanBatchFile(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

func (s *sqlStore) DeleteBatchFile(ctx context.Context, o BatchOwner, id string) error {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `DELETE FROM batch_files WHERE id = `+p(1)+` AND site = `+p(2)+` AND key_id = `+p(3), id, o.Site, o.KeyID)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrBatchFileNotFound
	}
	return err
}

// batchItemChunk is how many items go in one INSERT: 8 parameters each,
// well under both databases' limits on bind parameters.
const batchItemChunk = 500

func (s *sqlStore) CreateBatch(ctx context.Context, b Batch, items []BatchItem) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.insertBatch(ctx, tx, b, items, ItemPending); err != nil {
		return err
	}
	return tx.Commit()
}

// insertBatch writes b and its items, every item in state, inside tx.
func (s *sqlStore) insertBatch(ctx context.Context, tx *sql.Tx, b Batch, items []BatchItem, state string) error {
	meta := string(b.Metadata)
	if meta == "" {
		meta = "null"
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO batches (id, site, key_id, api, endpoint, input_file_id, created_us, expires_us,
	cancel_us, ended_us, total, metadata, output_file_id, error_file_id) VALUES (`+s.ph(1, 8)+`, 0, 0, `+s.ph(9, 4)+`)`,
		b.ID, b.Site, b.KeyID, b.API, b.Endpoint, b.InputFileID, us(b.Created), us(b.Expires),
		int64(len(items)), meta, b.OutputFileID, b.ErrorFileID); err != nil {
		return err
	}
	for start := 0; start < len(items); start += batchItemChunk {
		chunk := items[start:min(start+batchItemChunk, len(items))]
		var q strings.Builder
		q.WriteString(`INSERT INTO batch_items (id, batch_id, site, seq, custom_id, body, not_before_us, state, lease_until_us, owner, attempts, status_code, result) VALUES `)
		args := make([]any, 0, 7*len(chunk))
		for i, it := range chunk {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(" + s.ph(len(args)+1, 8) + `, 0, '', 0, 0, '')`)
			args = append(args, it.ID, b.ID, b.Site, it.Seq, it.CustomID, string(it.Body), us(b.Created), state)
		}
		if _, err := tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	return nil
}

const batchColumns = `id, site, key_id, api, endpoint, input_file_id, created_us, expires_us, cancel_us, ended_us, total, metadata, output_file_id, error_file_id`

func scanBatch(sc interface{ Scan(...any) error }) (Batch, error) {
	var b Batch
	var c, e, x, end int64
	var meta string
	err := sc.Scan(&b.ID, &b.Site, &b.KeyID, &b.API, &b.Endpoint, &b.InputFileID, &c, &e, &x, &end, &b.Total, &meta, &b.OutputFileID, &b.ErrorFileID)
	b.Created, b.Expires, b.Cancelled, b.Ended = fromUS(c), fromUS(e), fromUS(x), fromUS(end)
	b.Metadata = json.RawMessage(meta)
	return b, err
}

func (s *sqlStore) GetBatch(ctx context.Context, o BatchOwner, id string) (Batch, error) {
	return s.getBatch(ctx, s.db, o, id)
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (s *sqlStore) getBatch(ctx context.Context, q queryer, o BatchOwner, id string) (Batch, error) {
	p := s.d.placeholder
	b, err := scanBatch(q.QueryRowContext(ctx, `SELECT `+batchColumns+` FROM batches WHERE id = `+p(1)+` AND site = `+p(2)+` AND key_id = `+p(3), id, o.Site, o.KeyID))
	if errors.Is(err, sql.ErrNoRows) {
		return b, ErrBatchNotFound
	}
	if err != nil {
		return b, err
	}
	b.Counts, err = s.batchCounts(ctx, q, id)
	return b, err
}

func (s *sqlStore) batchCounts(ctx context.Context, q queryer, id string) (BatchCounts, error) {
	var c BatchCounts
	rows, err := q.QueryContext(ctx, `SELECT state, COUNT(*) FROM batch_items WHERE batch_id = `+s.d.placeholder(1)+` GROUP BY state`, id)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return c, err
		}
		switch state {
		case ItemPending:
			c.Pending = n
		case ItemRunning, ItemAtProvider:
			c.Running = n
		case ItemSucceeded:
			c.Succeeded = n
		case ItemErrored:
			c.Errored = n
		case ItemCanceled:
			c.Canceled = n
		case ItemExpired:
			c.Expired = n
		}
	}
	return c, rows.Err()
}

func (s *sqlStore) ListBatches(ctx context.Context, o BatchOwner, api, after, before string, limit int) ([]Batch, error) {
	p := s.d.placeholder
	q := `SELECT ` + batchColumns + ` FROM batches WHERE site = ` + p(1) + ` AND key_id = ` + p(2) + ` AND api = ` + p(3)
	args := []any{o.Site, o.KeyID, api}
	order := ` ORDER BY created_us DESC, id DESC`
	switch {
	case after != "":
		args = append(args, after, o.Site, o.KeyID)
		q += ` AND (created_us, id) < (SELECT created_us, id FROM batches WHERE id = ` + p(4) + ` AND site = ` + p(5) + ` AND key_id = ` + p(6) + `)`
	case before != "":
		// The page just newer than before: read upwards, then turn it.
		args = append(args, before, o.Site, o.KeyID)
		q += ` AND (created_us, id) > (SELECT created_us, id FROM batches WHERE id = ` + p(4) + ` AND site = ` + p(5) + ` AND key_id = ` + p(6) + `)`
		order = ` ORDER BY created_us, id`
	}
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q+order+` LIMIT `+p(len(args)), args...)
	if err != nil {
		return nil, err
	}
	var out []Batch
	for rows.Next() {
		b, err := scanBatch(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, b)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if before != "" && after == "" {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	for i := range out {
		if out[i].Counts, err = s.batchCounts(ctx, s.db, out[i].ID); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (s *sqlStore) CancelBatch(ctx context.Context, o BatchOwner, id string, now time.Time) (Batch, error) {
	p := s.d.placeholder
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Batch{}, err
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, `UPDATE batches SET cancel_us = `+p(1)+` WHERE id = `+p(2)+` AND site = `+p(3)+` AND key_id = `+p(4)+` AND cancel_us = 0 AND ended_us = 0`,
		us(now), id, o.Site, o.KeyID)
	if err != nil {
		return Batch{}, err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		if _, err := tx.ExecContext(ctx, `UPDATE batch_items SET state = 'canceled' WHERE batch_id = `+p(1)+` AND state = 'pending'`, id); err != nil {
			return Batch{}, err
		}
	}
	b, err := s.getBatch(ctx, tx, o, id)
	if err != nil {
		return b, err
	}
	return b, tx.Commit()
}

func (s *sqlStore) DeleteBatch(ctx context.Context, o BatchOwner, id string) error {
	p := s.d.placeholder
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var ended int64
	err = tx.QueryRowContext(ctx, `SELECT ended_us FROM batches WHERE id = `+p(1)+` AND site = `+p(2)+` AND key_id = `+p(3), id, o.Site, o.KeyID).Scan(&ended)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrBatchNotFound
	}
	if err != nil {
		return err
	}
	if ended == 0 {
		return ErrBatchRunning
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM batch_items WHERE batch_id = `+p(1), id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM batches WHERE id = `+p(1), id); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) BatchItems(ctx context.Context, batchID string) ([]BatchItem, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, custom_id, seq, state, status_code, attempts, result FROM batch_items WHERE batch_id = `+
		s.d.placeholder(1)+` ORDER BY seq`, batchID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BatchItem
	for rows.Next() {
		it := BatchItem{BatchID: batchID}
		var result string
		if err := rows.Scan(&it.ID, &it.CustomID, &it.Seq, &it.State, &it.StatusCode, &it.Attempts, &result); err != nil {
			return nil, err
		}
		it.Result = []byte(result)
		out = append(out, it)
	}
	return out, rows.Err()
}
