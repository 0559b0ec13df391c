package ledger

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// AuditEntry is one row of the audit log: who did what to what, when and
// from where. Fields are the changed fields' names and values, never a
// secret (the callers leave secrets out; the store cannot tell).
type AuditEntry struct {
	ID     string
	Time   time.Time
	Actor  string
	Action string
	Target string
	Source string
	Fields map[string]string
	// Seq and Hash are the entry's place in the hash chain
	// (audit_chain.go), set by AppendAudit.
	Seq  int64
	Hash string
}

// AuditFilter selects audit entries. Empty strings and zero times match
// everything; Before is a page cursor (an entry id): only older entries.
type AuditFilter struct {
	Actor, Action, Target string
	From, To              time.Time // [From, To)
	Before                string
	Limit                 int
}

// AuditStore keeps the audit log. It only appends: no method changes or
// removes an entry, and each entry is chained to the one before it
// (audit_chain.go), so a change made in the database shows.
type AuditStore interface {
	AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error)
	// QueryAudit returns the entries f selects, newest first, at most
	// f.Limit of them, and whether more follow.
	QueryAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, bool, error)
}

// auditID makes an id that sorts by time (fixed-width hex microseconds)
// and is unique among entries of the same microsecond.
func auditID(t time.Time) string {
	return fmt.Sprintf("audit_%016x%s", uint64(t.UnixMicro()), strings.ToLower(rand.Text()[:10]))
}

// AppendAudit stores e, filling its id and, when zero, its time.
func (s *sqlStore) AppendAudit(ctx context.Context, e AuditEntry) (AuditEntry, error) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC().Truncate(time.Microsecond)
	e.ID = auditID(e.Time)
	if e.Fields == nil {
		e.Fields = map[string]string{}
	}
	for k, v := range e.Fields {
		if !StorableText(k) || !StorableText(v) {
			delete(e.Fields, k)
		}
	}
	fields, err := json.Marshal(e.Fields)
	if err != nil {
		return e, err
	}
	clean := func(v string) string {
		if !StorableText(v) {
			return strings.ToValidUTF8(strings.ReplaceAll(v, "\x00", ""), "?")
		}
		return v
	}
	r := auditRow{id: e.ID, tsUS: e.Time.UnixMicro(), actor: clean(e.Actor), action: clean(e.Action), target: clean(e.Target),
		source: clean(e.Source), fields: string(fields)}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return e, err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.appendAuditRow(ctx, tx, &r); err != nil {
		return e, err
	}
	e.Seq, e.Hash = r.seq, r.hash
	return e, tx.Commit()
}

// QueryAudit answers f, newest first.
func (s *sqlStore) QueryAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, bool, error) {
	var where []string
	var args []any
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, s.d.placeholder(len(args))))
	}
	if f.Actor != "" {
		add("actor = %s", f.Actor)
	}
	if f.Action != "" {
		add("action = %s", f.Action)
	}
	if f.Target != "" {
		add("target = %s", f.Target)
	}
	if !f.From.IsZero() {
		add("ts_us >= %s", f.From.UnixMicro())
	}
	if !f.To.IsZero() {
		add("ts_us < %s", f.To.UnixMicro())
	}
	if f.Before != "" {
		add("id < %s", f.Before)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT id, ts_us, actor, action, target, source, fields FROM audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += fmt.Sprintf(" ORDER BY id DESC LIMIT %d", limit+1)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var ts int64
		var fields string
		if err := rows.Scan(&e.ID, &ts, &e.Actor, &e.Action, &e.Target, &e.Source, &fields); err != nil {
			return nil, false, err
		}
		e.Time = time.UnixMicro(ts).UTC()
		if err := json.Unmarshal([]byte(fields), &e.Fields); err != nil {
			return nil, false, fmt.Errorf("audit entry %s: fields: %w", e.ID, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// SCIMUser is a provisioned person as the SCIM API stores them: the
// resource's JSON (Doc) and the attributes its filters look up.
type SCIMUser struct {
	ID         string
	UserName   string
	ExternalID string
	Doc        []byte
	Updated    time.Time
}

// SCIMGroup is a provisioned group: its resource JSON and display name.
type SCIMGroup struct {
	ID          string
	DisplayName string
	Doc         []byte
	Updated     time.Time
}

// SCIMTombstone is a deleted user: their userName (lower-cased) and
// externalId, and when they were deleted.
type SCIMTombstone struct {
	UserName   string
	ExternalID string
	Deleted    time.Time
}

// ErrSCIMConflict is a user whose userName another user already has.
const ErrSCIMConflict = lookupError("userName is already taken")

// ErrSCIMNotFound is a SCIM user or group that is not stored.
const ErrSCIMNotFound = lookupError("no such SCIM resource")

// SCIMStore keeps SCIM users and groups in the ledger database, so every
// instance sees the same directory.
type SCIMStore interface {
	SCIMUsers(ctx context.Context) ([]SCIMUser, error)
	SCIMUser(ctx context.Context, id string) (SCIMUser, error)
	// PutSCIMUser inserts or replaces u; ErrSCIMConflict when another
	// user has its userName (compared case-insensitively).
	PutSCIMUser(ctx context.Context, u SCIMUser) error
	// DeleteSCIMUser removes the user and leaves a tombstone of their
	// userName and externalId, in one transaction: sign-in refuses the
	// person until PutSCIMUser stores a user of that userName or
	// externalId again, which removes the tombstone.
	DeleteSCIMUser(ctx context.Context, id string) error
	// SCIMTombstones are the people deleted and not provisioned again.
	SCIMTombstones(ctx context.Context) ([]SCIMTombstone, error)
	SCIMGroups(ctx context.Context) ([]SCIMGroup, error)
	SCIMGroup(ctx context.Context, id string) (SCIMGroup, error)
	PutSCIMGroup(ctx context.Context, g SCIMGroup) error
	DeleteSCIMGroup(ctx context.Context, id string) error
}

func (s *sqlStore) SCIMUsers(ctx context.Context) ([]SCIMUser, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, external_id, doc, updated_us FROM scim_users ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SCIMUser
	for rows.Next() {
		var u SCIMUser
		var doc string
		var us int64
		if err := rows.Scan(&u.ID, &u.ExternalID, &doc, &us); err != nil {
			return nil, err
		}
		u.Doc, u.Updated = []byte(doc), time.UnixMicro(us).UTC()
		out = append(out, u)
	}
	return out, rows.Err()
}

func (s *sqlStore) SCIMUser(ctx context.Context, id string) (SCIMUser, error) {
	u := SCIMUser{ID: id}
	var doc string
	var us int64
	err := s.db.QueryRowContext(ctx, `SELECT external_id, doc, updated_us FROM scim_users WHERE id = `+s.d.placeholder(1), id).Scan(&u.ExternalID, &doc, &us)
	if errors.Is(err, sql.ErrNoRows) {
		return u, ErrSCIMNotFound
	}
	u.Doc, u.Updated = []byte(doc), time.UnixMicro(us).UTC()
	return u, err
}

func (s *sqlStore) PutSCIMUser(ctx context.Context, u SCIMUser) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	p := s.d.placeholder
	key := strings.ToLower(u.UserName)
	var other string
	err = tx.QueryRowContext(ctx, `SELECT id FROM scim_users WHERE user_name_key = `+p(1)+` AND id <> `+p(2), key, u.ID).Scan(&other)
	if err == nil {
		return ErrSCIMConflict
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM scim_users WHERE id = `+p(1), u.ID); err != nil {
		return err
	}
	// Provisioned again: the directory speaks for the person once more.
	if _, err := tx.ExecContext(ctx, `DELETE FROM scim_tombstones WHERE user_name_key = `+p(1)+` OR (external_id <> '' AND external_id = `+p(2)+`)`,
		key, u.ExternalID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO scim_users (id, user_name_key, external_id, doc, updated_us) VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`)`,
		u.ID, key, u.ExternalID, string(u.Doc), micros(u.Updated)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) DeleteSCIMUser(ctx context.Context, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	p := s.d.placeholder
	var name, external string
	err = tx.QueryRowContext(ctx, `SELECT user_name_key, external_id FROM scim_users WHERE id = `+p(1)+s.forUpdate(), id).Scan(&name, &external)
	if errors.Is(err, sql.ErrNoRows) {
		return ErrSCIMNotFound
	}
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM scim_users WHERE id = `+p(1), id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO scim_tombstones (user_name_key, external_id, deleted_us) VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`)`,
		name, external, time.Now().UnixMicro()); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) SCIMTombstones(ctx context.Context) ([]SCIMTombstone, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT user_name_key, external_id, deleted_us FROM scim_tombstones ORDER BY deleted_us`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SCIMTombstone
	for rows.Next() {
		var ts SCIMTombstone
		var us int64
		if err := rows.Scan(&ts.UserName, &ts.ExternalID, &us); err != nil {
			return nil, err
		}
		ts.Deleted = time.UnixMicro(us).UTC()
		out = append(out, ts)
	}
	return out, rows.Err()
}

func deleted(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return ErrSCIMNotFound
	}
	return nil
}

func (s *sqlStore) SCIMGroups(ctx context.Context) ([]SCIMGroup, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, display_name, doc, updated_us FROM scim_groups ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SCIMGroup
	for rows.Next() {
		var g SCIMGroup
		var doc string
		var us int64
		if err := rows.Scan(&g.ID, &g.DisplayName, &doc, &us); err != nil {
			return nil, err
		}
		g.Doc, g.Updated = []byte(doc), time.UnixMicro(us).UTC()
		out = append(out, g)
	}
	return out, rows.Err()
}

func (s *sqlStore) SCIMGroup(ctx context.Context, id string) (SCIMGroup, error) {
	g := SCIMGroup{ID: id}
	var doc string
	var us int64
	err := s.db.QueryRowContext(ctx, `SELECT display_name, doc, updated_us FROM scim_groups WHERE id = `+s.d.placeholder(1), id).Scan(&g.DisplayName, &doc, &us)
	if errors.Is(err, sql.ErrNoRows) {
		return g, ErrSCIMNotFound
	}
	g.Doc, g.Updated = []byte(doc), time.UnixMicro(us).UTC()
	return g, err
}

func (s *sqlStore) PutSCIMGroup(ctx context.Context, g SCIMGroup) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	p := s.d.placeholder
	if _, err := tx.ExecContext(ctx, `DELETE FROM scim_groups WHERE id = `+p(1), g.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO scim_groups (id, display_name, doc, updated_us) VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`)`,
		g.ID, g.DisplayName, string(g.Doc), micros(g.Updated)); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) DeleteSCIMGroup(ctx context.Context, id string) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM scim_groups WHERE id = `+s.d.placeholder(1), id)
	return deleted(res, err)
}
