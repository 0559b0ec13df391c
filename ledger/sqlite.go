package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"modernc.org/sqlite" // also registers the pure-Go "sqlite" driver
)

// OpenSQLite opens (creating if needed) the SQLite ledger at path and
// migrates it. WAL lets reports read while the writer appends; the busy
// timeout rides out the brief lock overlap when a reload briefly runs two
// writers on one file.
func OpenSQLite(path string) (Store, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("ledger sqlite: %w", err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "synchronous(NORMAL)")
	// Write transactions take the lock up front, so two writers wait on the
	// busy timeout instead of failing a lock upgrade midway.
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("ledger sqlite: %w", err)
	}
	s := &sqlStore{db: db, d: dialect{
		name:           "sqlite",
		placeholder:    questionPlaceholder,
		lockMigrations: func(context.Context, *sql.Tx) error { return nil }, // _txlock=immediate already serializes
		least:          "MIN", greatest: "MAX",
		rowError: sqliteRowError,
	}}
	if err := s.migrate(context.Background()); err != nil {
		_ = db.Close()
		return nil, err
	}
	// Prepared INSERTs of 16 rows and of one, run inside each batch's
	// transaction: a statement as long as the batch would make SQLite
	// compile afresh, thousands of placeholders long, every batch
	// (BenchmarkSQLiteInsertBatch).
	if s.insertOne, err = db.Prepare(insertOneSQL(questionPlaceholder)); err == nil {
		s.insertMany, err = db.Prepare(insertRowsSQL(questionPlaceholder, rowsPerInsert))
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("ledger sqlite: %w", err)
	}
	s.yield = newNetYield()
	return s, nil
}

// sqliteRowError is SQLITE_TOOBIG, SQLITE_CONSTRAINT or SQLITE_MISMATCH
// (primary codes 18, 19, 20): the row is at fault, not the file.
func sqliteRowError(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case 18, 19, 20:
		return true
	}
	return false
}
