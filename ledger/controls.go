package ledger

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Runtime keys and workspaces, managed through the admin API and kept in
// the ledger database so every gateway instance on it sees them. Every
// change bumps one version number; instances poll it (cheap: one row) and
// reload everything only when it moved. After its own change an instance
// reads back only the rows it wrote, when the version shows no other
// change came between (policy.Controls).

// Limits are what a key or workspace may spend and how fast it may call.
// Amounts are in cents, at most money.MaxBudgetCents. A nil budget is none; a
// budget of 0 admits no paid use (rows stored before budgets could be 0
// never wrote a zero, so they read the same). Zero soft budget and rates
// mean no limit.
type Limits struct {
	Models             []string `json:"models,omitempty"`
	BudgetCents        *int64   `json:"budget_cents,omitempty"`
	BudgetPeriod       string   `json:"budget_period,omitempty"` // daily | weekly | monthly | total
	SoftBudgetCents    int64    `json:"soft_budget_cents,omitempty"`
	SessionBudgetCents *int64   `json:"session_budget_cents,omitempty"`
	RPM                int64    `json:"rpm,omitempty"`
	TPM                int64    `json:"tpm,omitempty"`
	MaxParallel        int64    `json:"max_parallel,omitempty"`
	// MCP is the MCP allow-list ("server" or "server/tool"); nil allows
	// every server. It lives in the same JSON settings column as the
	// rest, so it needs no migration.
	MCP []string `json:"mcp,omitempty"`
	// MCPApproval adds MCP servers ("server") or tools ("server/tool")
	// whose calls wait for a person's approval, on top of mcp_servers'
	// require_approval; a key's list and its workspace's both apply.
	MCPApproval []string `json:"mcp_approval,omitempty"`
	// MCPToolSearch: the MCP gateway's tools/list offers a search tool and
	// a call tool instead of every tool (on a key or its workspace).
	MCPToolSearch bool `json:"mcp_tool_search,omitempty"`
	// CountAgentReported (workspaces only): the costs its keys' coding
	// agents report of requests the gateway did not serve (POST /v1/logs)
	// count against its budgets, each bounded by its tokens at list
	// price. Off, they are reports only.
	CountAgentReported bool `json:"count_agent_reported,omitempty"`
	// Breaker watches the agent sessions of a key, workspace or group for
	// loops and runaway spend (package breaker); nil: not watched.
	Breaker *BreakerRules `json:"breaker,omitempty"`
}

// ControlKey is a runtime key. Only a hash of its secret is kept.
type ControlKey struct {
	ID          string
	Name        string
	WorkspaceID string
	SecretHash  string // hex SHA-256 of the secret
	Hint        string // display-only: the secret's start and end
	Status      string // active | inactive | archived
	CreatedAt   time.Time
	UpdatedAt   time.Time
	ExpiresAt   time.Time // zero: never
	Limits      Limits
	// CreatedBy is who made the key when it was not the admin API: a
	// person signed in with the identity provider (Type "oidc"). Nil:
	// the admin API.
	CreatedBy *KeyCreator
}

// KeyCreator names who created a key, as the keys API's created_by shows.
type KeyCreator struct {
	Type    string `json:"type"`
	ID      string `json:"id"`
	Email   string `json:"email,omitempty"`
	Subject string `json:"subject,omitempty"`
	// Issuer is the identity provider that named Subject: together they
	// are the person, whatever their email becomes.
	Issuer string `json:"issuer,omitempty"`
	// Groups are the person's groups the gateway's rules matched when
	// the key was minted, one per line (GroupLines), and Budget the
	// per-person default their group rule sets: a person's limits follow
	// them, not their keys.
	Groups string        `json:"groups,omitempty"`
	Budget *PersonBudget `json:"person_budget,omitempty"`
	// Role is the role their groups gave them (admin, auditor, member):
	// the key acts as a member, but what a person's role alone forbids
	// (an auditor deciding an MCP approval) reads it.
	Role string `json:"role,omitempty"`
}

// PersonBudget is a group rule's `budget`: each member's own default
// limit, counted over all their keys (spend_limits.go).
type PersonBudget struct {
	Cents     int64  `json:"cents"`
	Period    string `json:"period,omitempty"`
	SoftCents int64  `json:"soft_cents,omitempty"`
	// Downgrade is the alias requests go to past it (at_cap downgrade).
	Downgrade string `json:"downgrade,omitempty"`
	// Bound lets Downgrade be a priced alias.
	Bound *DowngradeBound `json:"downgrade_bound,omitempty"`
	// Group is the group whose rule set it, which reports name as its
	// source; "" (keys minted before it was kept): the first group.
	Group string `json:"group,omitempty"`
}

// keySettings is a key's settings column: its limits, flattened as they
// always were, and who created it, so no migration is needed for it.
type keySettings struct {
	Limits
	CreatedBy *KeyCreator `json:"created_by,omitempty"`
}

func (k *ControlKey) settings() ([]byte, error) {
	return json.Marshal(keySettings{Limits: k.Limits, CreatedBy: k.CreatedBy})
}

func (k *ControlKey) setSettings(b string) error {
	var ks keySettings
	if err := json.Unmarshal([]byte(b), &ks); err != nil {
		return err
	}
	k.Limits, k.CreatedBy = ks.Limits, ks.CreatedBy
	return nil
}

// ControlWorkspace is a runtime workspace.
type ControlWorkspace struct {
	ID         string
	Name       string
	CreatedAt  time.Time
	UpdatedAt  time.Time
	ArchivedAt time.Time // zero: not archived
	Limits     Limits
}

// Controls is everything the runtime key table holds, as of Version.
type Controls struct {
	Version    int64
	Keys       []ControlKey
	Workspaces []ControlWorkspace
	// SignedOut are the digests (SessionDigest) of the dashboard sessions
	// signed out and not yet expired: all of them, in a partial read too.
	SignedOut []string
}

// ControlStore keeps runtime keys and workspaces.
type ControlStore interface {
	// ControlVersion is bumped by every change.
	ControlVersion(ctx context.Context) (int64, error)
	LoadControls(ctx context.Context) (Controls, error)
	// ReadControls is LoadControls for the keys and workspaces with the
	// ids given: what an instance reads back after its own change,
	// instead of the whole table. Ids not stored are left out.
	ReadControls(ctx context.Context, keyIDs, workspaceIDs []string) (Controls, error)
	// PutKey inserts or replaces a key; PutWorkspace a workspace.
	PutKey(ctx context.Context, k ControlKey) error
	PutWorkspace(ctx context.Context, w ControlWorkspace) error
	// UpdateKey applies change to key id as stored, holding the row
	// against every other writer from the read to the write, so
	// concurrent updates each change only their own fields and none is
	// lost. An error from change is returned as is and nothing is
	// written; an unknown id is ErrControlNotFound. UpdateWorkspace is
	// the same for a workspace.
	UpdateKey(ctx context.Context, id string, change func(*ControlKey) error) (ControlKey, error)
	UpdateWorkspace(ctx context.Context, id string, change func(*ControlWorkspace) error) (ControlWorkspace, error)
	// SignOut ends a dashboard session on every instance until expires
	// (signout.go).
	SignOut(ctx context.Context, sessionID string, expires time.Time) error
}

// ErrControlNotFound is an update of a key or workspace that is not stored.
const ErrControlNotFound = lookupError("no such key or workspace")

// Cents is a budget amount, for the pointer fields of Limits.
func Cents(n int64) *int64 { return &n }

// ErrDuplicateSecret is a new key whose secret hash is already stored.
const ErrDuplicateSecret = lookupError("a key with this secret already exists")

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(us int64) time.Time {
	if us == 0 {
		return time.Time{}
	}
	return time.UnixMicro(us).UTC()
}

func (s *sqlStore) ControlVersion(ctx context.Context) (int64, error) {
	var v int64
	err := s.db.QueryRowContext(ctx, `SELECT version FROM control_version WHERE id = 1`).Scan(&v)
	return v, err
}

func (s *sqlStore) bump(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE control_version SET version = version + 1 WHERE id = 1`)
	return err
}

func (s *sqlStore) PutKey(ctx context.Context, k ControlKey) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.putKeyTx(ctx, tx, k); err != nil {
		return err
	}
	return tx.Commit()
}

// forUpdate locks the rows a SELECT reads until the transaction ends; in
// SQLite every write transaction already holds the database (_txlock
// immediate), so it needs nothing.
func (s *sqlStore) forUpdate() string {
	if s.d.name == "postgres" {
		return " FOR UPDATE"
	}
	return ""
}

func (s *sqlStore) UpdateKey(ctx context.Context, id string, change func(*ControlKey) error) (ControlKey, error) {
	var k ControlKey
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return k, err
	}
	defer func() { _ = tx.Rollback() }()
	k, err = scanKey(tx.QueryRowContext(ctx, `SELECT `+keyColumns+` FROM control_keys WHERE id = `+s.d.placeholder(1)+s.forUpdate(), id))
	if errors.Is(err, sql.ErrNoRows) {
		return k, ErrControlNotFound
	}
	if err != nil {
		return k, err
	}
	if err := change(&k); err != nil {
		return k, err
	}
	// An UPDATE in place, not the DELETE and INSERT of a put: a writer
	// waiting on the row lock must find the row again once it is free.
	newSettings, err := k.settings()
	if err != nil {
		return k, err
	}
	p := s.d.placeholder
	if _, err := tx.ExecContext(ctx, `UPDATE control_keys SET name = `+p(1)+`, workspace_id = `+p(2)+`, status = `+p(3)+`, updated_at_us = `+p(4)+
		`, expires_at_us = `+p(5)+`, settings = `+p(6)+` WHERE id = `+p(7),
		k.Name, k.WorkspaceID, k.Status, micros(k.UpdatedAt), micros(k.ExpiresAt), string(newSettings), id); err != nil {
		return k, err
	}
	var gone []MCPUpstreamToken
	if k.Status != "active" {
		if gone, err = s.deleteKeyTokens(ctx, tx, id); err != nil {
			return k, err
		}
	}
	k.ID = id
	if err := s.bump(ctx, tx); err != nil {
		return k, err
	}
	if err := tx.Commit(); err != nil {
		return k, err
	}
	s.gone.tell(gone)
	return k, nil
}

func (s *sqlStore) UpdateWorkspace(ctx context.Context, id string, change func(*ControlWorkspace) error) (ControlWorkspace, error) {
	var w ControlWorkspace
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return w, err
	}
	defer func() { _ = tx.Rollback() }()
	w, err = scanWorkspace(tx.QueryRowContext(ctx, `SELECT `+workspaceColumns+` FROM control_workspaces WHERE id = `+s.d.placeholder(1)+s.forUpdate(), id))
	if errors.Is(err, sql.ErrNoRows) {
		return w, ErrControlNotFound
	}
	if err != nil {
		return w, err
	}
	if err := change(&w); err != nil {
		return w, err
	}
	newSettings, err := json.Marshal(w.Limits)
	if err != nil {
		return w, err
	}
	p := s.d.placeholder
	if _, err := tx.ExecContext(ctx, `UPDATE control_workspaces SET name = `+p(1)+`, updated_at_us = `+p(2)+`, archived_at_us = `+p(3)+
		`, settings = `+p(4)+` WHERE id = `+p(5),
		w.Name, micros(w.UpdatedAt), micros(w.ArchivedAt), string(newSettings), id); err != nil {
		return w, err
	}
	w.ID = id
	if err := s.bump(ctx, tx); err != nil {
		return w, err
	}
	return w, tx.Commit()
}

func (s *sqlStore) putKeyTx(ctx context.Context, tx *sql.Tx, k ControlKey) error {
	settings, err := k.settings()
	if err != nil {
		return err
	}
	p := s.d.placeholder
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM control_keys WHERE secret_hash = `+p(1)+` AND id <> `+p(2),
		k.SecretHash, k.ID).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return ErrDuplicateSecret
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM control_keys WHERE id = `+p(1), k.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO control_keys (id, name, workspace_id, secret_hash, hint, status, created_at_us, updated_at_us, expires_at_us, settings)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`, `+p(7)+`, `+p(8)+`, `+p(9)+`, `+p(10)+`)`,
		k.ID, k.Name, k.WorkspaceID, k.SecretHash, k.Hint, k.Status, micros(k.CreatedAt), micros(k.UpdatedAt), micros(k.ExpiresAt), string(settings)); err != nil {
		return err
	}
	return s.bump(ctx, tx)
}

func (s *sqlStore) PutWorkspace(ctx context.Context, w ControlWorkspace) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := s.putWorkspaceTx(ctx, tx, w); err != nil {
		return err
	}
	return tx.Commit()
}

func (s *sqlStore) putWorkspaceTx(ctx context.Context, tx *sql.Tx, w ControlWorkspace) error {
	settings, err := json.Marshal(w.Limits)
	if err != nil {
		return err
	}
	p := s.d.placeholder
	if _, err := tx.ExecContext(ctx, `DELETE FROM control_workspaces WHERE id = `+p(1), w.ID); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO control_workspaces (id, name, created_at_us, updated_at_us, archived_at_us, settings)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`)`,
		w.ID, w.Name, micros(w.CreatedAt), micros(w.UpdatedAt), micros(w.ArchivedAt), string(settings)); err != nil {
		return err
	}
	return s.bump(ctx, tx)
}

func (s *sqlStore) LoadControls(ctx context.Context) (Controls, error) {
	return s.loadControls(ctx, "", nil, "", nil)
}

func (s *sqlStore) ReadControls(ctx context.Context, keyIDs, workspaceIDs []string) (Controls, error) {
	keyWhere, keyArgs := s.idsWhere(keyIDs)
	wsWhere, wsArgs := s.idsWhere(workspaceIDs)
	return s.loadControls(ctx, keyWhere, keyArgs, wsWhere, wsArgs)
}

// idsWhere picks the rows of ids, none when there are none.
func (s *sqlStore) idsWhere(ids []string) (string, []any) {
	if len(ids) == 0 {
		return " WHERE 1 = 0", nil
	}
	var q strings.Builder
	q.WriteString(" WHERE 1 = 1")
	args := s.appendIn(&q, nil, "id", ids, false)
	return q.String(), args
}

// loadControls reads the version and the keys and workspaces the where
// clauses pick, in one snapshot: PostgreSQL's default isolation takes a
// snapshot per statement, so the read asks for one per transaction, and
// the rows can be no older than the version read with them.
func (s *sqlStore) loadControls(ctx context.Context, keyWhere string, keyArgs []any, wsWhere string, wsArgs []any) (Controls, error) {
	var c Controls
	opts := &sql.TxOptions{}
	if s.d.name == "postgres" {
		opts = &sql.TxOptions{ReadOnly: true, Isolation: sql.LevelRepeatableRead}
	}
	tx, err := s.db.BeginTx(ctx, opts)
	if err != nil {
		return c, err
	}
	defer func() { _ = tx.Rollback() }()
	if err := tx.QueryRowContext(ctx, `SELECT version FROM control_version WHERE id = 1`).Scan(&c.Version); err != nil {
		return c, err
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+keyColumns+` FROM control_keys`+keyWhere+` ORDER BY created_at_us, id`, keyArgs...)
	if err != nil {
		return c, err
	}
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			rows.Close()
			return c, err
		}
		c.Keys = append(c.Keys, k)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, err
	}
	rows, err = tx.QueryContext(ctx, `SELECT `+workspaceColumns+` FROM control_workspaces`+wsWhere+` ORDER BY created_at_us, id`, wsArgs...)
	if err != nil {
		return c, err
	}
	defer rows.Close()
	for rows.Next() {
		w, err := scanWorkspace(rows)
		if err != nil {
			return c, err
		}
		c.Workspaces = append(c.Workspaces, w)
	}
	if err := rows.Err(); err != nil {
		return c, err
	}
	if c.SignedOut, err = s.signedOut(ctx, tx); err != nil {
		return c, err
	}
	c.Sort()
	return c, nil
}

// Sort orders the keys and the workspaces by creation, then id in byte
// order, so a snapshot merged in memory lists them as a full load does
// (PostgreSQL's ORDER BY follows the database's collation, not bytes).
func (c *Controls) Sort() {
	slices.SortStableFunc(c.Keys, func(a, b ControlKey) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	slices.SortStableFunc(c.Workspaces, func(a, b ControlWorkspace) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
}

const keyColumns = `id, name, workspace_id, secret_hash, hint, status, created_at_us, updated_at_us, expires_at_us, settings`

const workspaceColumns = `id, name, created_at_us, updated_at_us, archived_at_us, settings`

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// scanKey reads a row of keyColumns.
func scanKey(r scanner) (ControlKey, error) {
	var k ControlKey
	var created, updated, expires int64
	var settings string
	if err := r.Scan(&k.ID, &k.Name, &k.WorkspaceID, &k.SecretHash, &k.Hint, &k.Status, &created, &updated, &expires, &settings); err != nil {
		return k, err
	}
	k.CreatedAt, k.UpdatedAt, k.ExpiresAt = fromMicros(created), fromMicros(updated), fromMicros(expires)
	if err := k.setSettings(settings); err != nil {
		return k, fmt.Errorf("key %s: settings: %w", k.ID, err)
	}
	return k, nil
}

// scanWorkspace reads a row of workspaceColumns.
func scanWorkspace(r scanner) (ControlWorkspace, error) {
	var w ControlWorkspace
	var created, updated, archived int64
	var settings string
	if err := r.Scan(&w.ID, &w.Name, &created, &updated, &archived, &settings); err != nil {
		return w, err
	}
	w.CreatedAt, w.UpdatedAt, w.ArchivedAt = fromMicros(created), fromMicros(updated), fromMicros(archived)
	if err := json.Unmarshal([]byte(settings), &w.Limits); err != nil {
		return w, fmt.Errorf("workspace %s: settings: %w", w.ID, err)
	}
	return w, nil
}
