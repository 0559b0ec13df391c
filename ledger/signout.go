package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"time"
)

// Dashboard sessions live sealed in the browser, so no instance keeps
// them; what the instances share is the list of sessions signed out
// before they expire. It rides on the runtime keys' version: a sign-out
// bumps it, and every instance's poll reloads the list with the keys
// (policy.Controls), so checking a session costs no query.

// SessionDigest is how a session id is stored: its SHA-256, so the table
// names no session a cookie could be matched to.
func SessionDigest(sessionID string) string {
	d := sha256.Sum256([]byte(sessionID))
	return hex.EncodeToString(d[:])
}

// SignOut records that the session sessionID ended, until expires (when
// its cookie would have ended anyway), and bumps the control version so
// every instance reloads the list. Rows past their expiry are deleted in
// the same transaction: the table holds only sessions that could still
// be presented.
func (s *sqlStore) SignOut(ctx context.Context, sessionID string, expires time.Time) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	p := s.d.placeholder
	if _, err := tx.ExecContext(ctx, `DELETE FROM signed_out_sessions WHERE expires_us <= `+p(1), time.Now().UnixMicro()); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO signed_out_sessions (id, expires_us) VALUES (`+p(1)+`, `+p(2)+`) ON CONFLICT (id) DO NOTHING`,
		SessionDigest(sessionID), expires.UnixMicro()); err != nil {
		return err
	}
	if err := s.bump(ctx, tx); err != nil {
		return err
	}
	return tx.Commit()
}

// signedOut reads the digests of the sessions signed out and not yet
// expired, in the control read's transaction.
func (s *sqlStore) signedOut(ctx context.Context, tx *sql.Tx) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT id FROM signed_out_sessions WHERE expires_us > `+s.d.placeholder(1), time.Now().UnixMicro())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}
