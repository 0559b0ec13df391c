package ledger

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
)

// The audit log is a hash chain. Each row has a seq (1, 2, 3, … in the
// order rows were appended), the hash of the row before it (prev_hash;
// empty for seq 1) and its own hash, the SHA-256 of its canonical
// content and prev_hash (auditHash). audit_head holds the last seq and
// hash. An append reads and rewrites the head under its row lock, so
// appenders on every instance take turns and the chain cannot fork; a
// unique index on seq would refuse a fork anyway.
//
// VerifyAudit walks the chain: a row whose content was edited no longer
// matches its hash, a deleted row leaves a gap in seq, an inserted row
// has no seq (or breaks the next row's prev_hash), and a deleted tail
// leaves the head past the last row. Whoever can write the table can
// still rewrite every row from an edit on and the head with them; the
// head's seq and hash that verify prints, kept outside the database,
// show that too (VerifyAudit's expect).

// auditRow is an audit_log row as stored, the chain columns included.
type auditRow struct {
	seq                                   int64
	id                                    string
	tsUS                                  int64
	actor, action, target, source, fields string
	prevHash, hash                        string
}

// auditHash is the hex SHA-256 of a row's canonical content: a version
// tag, then seq, prev_hash, id, time, actor, action, target, source and
// the fields' JSON as stored, each string length-prefixed so no two rows
// encode alike.
func auditHash(r auditRow) string {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	str := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	str("modelgate audit v1")
	h.Write(n[:binary.PutVarint(n[:], r.seq)])
	str(r.prevHash)
	str(r.id)
	h.Write(n[:binary.PutVarint(n[:], r.tsUS)])
	for _, s := range []string{r.actor, r.action, r.target, r.source, r.fields} {
		str(s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// appendAuditRow chains r after the head and inserts it, in tx: the
// head's row lock (SQLite: the write transaction itself) is held until
// tx ends, so no other append comes between the read and the write.
func (s *sqlStore) appendAuditRow(ctx context.Context, tx *sql.Tx, r *auditRow) error {
	var seq int64
	var prev string
	if err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`+s.forUpdate()).Scan(&seq, &prev); err != nil {
		return fmt.Errorf("audit head: %w", err)
	}
	r.seq, r.prevHash = seq+1, prev
	r.hash = auditHash(*r)
	p := s.d.placeholder
	if _, err := tx.ExecContext(ctx, `INSERT INTO audit_log (id, ts_us, actor, action, target, source, fields, seq, prev_hash, hash) VALUES (`+
		p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`, `+p(7)+`, `+p(8)+`, `+p(9)+`, `+p(10)+`)`,
		r.id, r.tsUS, r.actor, r.action, r.target, r.source, r.fields, r.seq, r.prevHash, r.hash); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE audit_head SET seq = `+p(1)+`, hash = `+p(2)+` WHERE id = 1`, r.seq, r.hash)
	return err
}

// chainAuditTx is migration 19's step: the rows logged before the chain
// existed are chained in id order (their time order), a thousand at a
// time, and the head set to the last.
func (s *sqlStore) chainAuditTx(ctx context.Context, tx *sql.Tx) error {
	p := s.d.placeholder
	var seq int64
	prev, after := "", ""
	for {
		rows, err := tx.QueryContext(ctx, `SELECT id, ts_us, actor, action, target, source, fields FROM audit_log WHERE id > `+p(1)+` ORDER BY id LIMIT 1000`, after)
		if err != nil {
			return err
		}
		var batch []auditRow
		for rows.Next() {
			var r auditRow
			if err := rows.Scan(&r.id, &r.tsUS, &r.actor, &r.action, &r.target, &r.source, &r.fields); err != nil {
				rows.Close()
				return err
			}
			batch = append(batch, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		for _, r := range batch {
			seq++
			r.seq, r.prevHash = seq, prev
			r.hash = auditHash(r)
			prev = r.hash
			if _, err := tx.ExecContext(ctx, `UPDATE audit_log SET seq = `+p(1)+`, prev_hash = `+p(2)+`, hash = `+p(3)+` WHERE id = `+p(4),
				r.seq, r.prevHash, r.hash, r.id); err != nil {
				return err
			}
		}
		after = batch[len(batch)-1].id
	}
	_, err := tx.ExecContext(ctx, `UPDATE audit_head SET seq = `+p(1)+`, hash = `+p(2)+` WHERE id = 1`, seq, prev)
	return err
}

// AuditVerification is what VerifyAudit found: how many rows it checked,
// the head it reached, and the first fault, if any.
type AuditVerification struct {
	Rows     int64
	HeadSeq  int64
	HeadHash string
	// Fault is the first break in the chain, in words naming the row;
	// empty when the log is intact.
	Fault string
}

// AuditAnchor is a head seen earlier (printed by a verify, kept outside
// the database): the chain must still hold a row of that seq and hash.
type AuditAnchor struct {
	Seq  int64
	Hash string
}

// verifyAudit walks the chain in one read snapshot.
func (s *sqlStore) verifyAudit(ctx context.Context, anchor *AuditAnchor) (AuditVerification, error) {
	var v AuditVerification
	opts := &sql.TxOptions{ReadOnly: true}
	if s.d.name == "postgres" {
		opts.Isolation = sql.LevelRepeatableRead
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return v, err
	}
	defer func() { _ = tx.Rollback() }()
	var headSeq int64
	var headHash string
	if err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_head WHERE id = 1`).Scan(&headSeq, &headHash); err != nil {
		return v, fmt.Errorf("audit head: %w (is this a Modelgate ledger at release 0.3 or later?)", err)
	}
	var stray string
	switch err := tx.QueryRowContext(ctx, `SELECT id FROM audit_log WHERE seq <= 0 ORDER BY id LIMIT 1`).Scan(&stray); {
	case err == nil:
		v.Fault = fmt.Sprintf("row %s has no place in the chain (seq 0): it was inserted without the gateway", stray)
		return v, nil
	case !errors.Is(err, sql.ErrNoRows):
		return v, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, id, ts_us, actor, action, target, source, fields, prev_hash, hash FROM audit_log WHERE seq > 0 ORDER BY seq`)
	if err != nil {
		return v, err
	}
	defer rows.Close()
	prev := ""
	anchored := anchor == nil
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.seq, &r.id, &r.tsUS, &r.actor, &r.action, &r.target, &r.source, &r.fields, &r.prevHash, &r.hash); err != nil {
			return v, err
		}
		want := v.HeadSeq + 1
		switch {
		case r.seq > want:
			v.Fault = fmt.Sprintf("%s: the chain goes from seq %d to seq %d (id %s)", missing(want, r.seq-1), v.HeadSeq, r.seq, r.id)
		case r.seq < want:
			v.Fault = fmt.Sprintf("row seq %d (id %s) repeats a seq: it was inserted without the gateway", r.seq, r.id)
		case r.prevHash != prev:
			v.Fault = fmt.Sprintf("row seq %d (id %s) does not follow row seq %d: its prev_hash is not that row's hash (a row was replaced or inserted)", r.seq, r.id, v.HeadSeq)
		case auditHash(r) != r.hash:
			v.Fault = fmt.Sprintf("row seq %d (id %s) was altered or forged: its content does not match its hash", r.seq, r.id)
		}
		if v.Fault != "" {
			return v, nil
		}
		if anchor != nil && r.seq == anchor.Seq {
			if r.hash != anchor.Hash {
				v.Fault = fmt.Sprintf("row seq %d (id %s) is not the row the anchor recorded: its hash is %s, the anchor's %s (the chain was rewritten from this row or before)", r.seq, r.id, r.hash, anchor.Hash)
				return v, nil
			}
			anchored = true
		}
		v.Rows++
		v.HeadSeq, prev = r.seq, r.hash
	}
	if err := rows.Err(); err != nil {
		return v, err
	}
	v.HeadHash = prev
	switch {
	case headSeq > v.HeadSeq:
		v.Fault = fmt.Sprintf("%s: the chain ends at seq %d but the head records seq %d", missing(v.HeadSeq+1, headSeq), v.HeadSeq, headSeq)
	case headSeq < v.HeadSeq:
		v.Fault = fmt.Sprintf("rows after seq %d were inserted without the gateway: the head records seq %d, the chain ends at seq %d", headSeq, headSeq, v.HeadSeq)
	case headHash != prev:
		v.Fault = fmt.Sprintf("the head's hash is not row seq %d's: the last row was replaced", headSeq)
	case !anchored:
		v.Fault = fmt.Sprintf("the anchor's seq %d is past the chain's end (seq %d): rows were deleted and the chain rewritten", anchor.Seq, v.HeadSeq)
	}
	return v, nil
}

// missing names the deleted rows from to to.
func missing(from, to int64) string {
	if from == to {
		return fmt.Sprintf("row seq %d is missing (deleted)", from)
	}
	return fmt.Sprintf("rows seq %d to %d are missing (deleted)", from, to)
}

// VerifyAudit checks the audit log of the ledger at dsn (driver "sqlite"
// or "postgres") without migrating or writing it: a verifier must work
// on a copy, a backup, or a database the gateway is not running on.
// anchor, when set, is a head printed by an earlier verify.
func VerifyAudit(ctx context.Context, driver, dsn string, anchor *AuditAnchor) (AuditVerification, error) {
	var s *sqlStore
	switch driver {
	case "sqlite":
		if _, err := os.Stat(dsn); err != nil {
			return AuditVerification{}, fmt.Errorf("ledger sqlite: %w", err)
		}
		q := url.Values{}
		q.Set("mode", "ro")
		q.Add("_pragma", "busy_timeout(5000)")
		db, err := sql.Open("sqlite", "file:"+dsn+"?"+q.Encode())
		if err != nil {
			return AuditVerification{}, fmt.Errorf("ledger sqlite: %w", err)
		}
		s = &sqlStore{db: db, d: dialect{name: "sqlite", placeholder: questionPlaceholder}}
	case "postgres":
		db, err := sql.Open("pgx", dsn)
		if err != nil {
			return AuditVerification{}, errors.New("ledger postgres: invalid connection string")
		}
		s = &sqlStore{db: db, d: dialect{name: "postgres", placeholder: numberedPlaceholder}}
	default:
		return AuditVerification{}, fmt.Errorf("ledger: unknown store %q; use sqlite or postgres", driver)
	}
	defer s.db.Close()
	return s.verifyAudit(ctx, anchor)
}
