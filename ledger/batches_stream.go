package ledger

import (
	"context"
	"database/sql"
	"errors"
)

// BatchFileStreamer reads a file's content in pieces, so that sending a
// large file back never holds it whole.
type BatchFileStreamer interface {
	// BatchFileChunks calls fn with the content of the owner's file id in
	// order, in pieces of at most chunk characters (four bytes each at
	// most), one query a piece. A file that is not there answers
	// ErrBatchFileNotFound before fn is called; fn's error stops the read
	// and is returned.
	BatchFileChunks(ctx context.Context, o BatchOwner, id string, chunk int, fn func([]byte) error) error
}

var _ BatchFileStreamer = (*sqlStore)(nil)

func (s *sqlStore) BatchFileChunks(ctx context.Context, o BatchOwner, id string, chunk int, fn func([]byte) error) error {
	p := s.d.placeholder
	// substr counts characters in both databases, so a piece never cuts
	// a UTF-8 sequence.
	q := `SELECT substr(content, ` + p(1) + `, ` + p(2) + `) FROM batch_files WHERE id = ` + p(3) + ` AND site = ` + p(4) + ` AND key_id = ` + p(5)
	for from := 1; ; from += chunk {
		var piece string
		err := s.db.QueryRowContext(ctx, q, from, chunk, id, o.Site, o.KeyID).Scan(&piece)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrBatchFileNotFound
		}
		if err != nil {
			return err
		}
		if piece == "" {
			return nil
		}
		if err := fn([]byte(piece)); err != nil {
			return err
		}
	}
}
