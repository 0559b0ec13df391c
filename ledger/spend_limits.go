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

// Spend limits are the limits an admin sets through the Spend Limits API
// (handlers/admin), beyond a key's and a workspace's own budgets: on the
// organization, a group (each member's default, or a pool the members
// share), a person (every key minted for them) or a key, each daily,
// weekly or monthly. Every instance reads them all with the spend each
// second (policy.Budgets), so a change holds everywhere within 2 s.

// The scopes of spend limits and of the spend they count. A group's
// per-member default counts its members' ScopeUser spend; a pool counts
// the group's own.
const (
	ScopeOrganization = "organization"
	ScopeUser         = "user"
	ScopeGroup        = "rbac_group"
	// ScopeGroupPool is a group's shared pool as a limit's scope; its
	// spend is the group's (ScopeGroup).
	ScopeGroupPool = "rbac_group_pool"
)

// OrganizationID is the organization's scope id: the gateway serves one.
const OrganizationID = "organization"

// SpendLimit is one limit set through the Spend Limits API.
type SpendLimit struct {
	ID                     string
	Scope, ScopeID, Period string
	// AmountCents nil is an explicit no-limit override (a person exempt
	// from their group's default).
	AmountCents *int64
	// Downgrade is the alias requests go to past the cap (at_cap
	// downgrade); "" refuses them.
	Downgrade string
	// Bound lets Downgrade be a priced alias (downgrade_bound.go).
	Bound                DowngradeBound
	CreatedAt, UpdatedAt time.Time
}

type spendLimitSettings struct {
	Downgrade string `json:"downgrade,omitempty"`
	DowngradeBound
}

// SpendLimitStore keeps spend limits.
type SpendLimitStore interface {
	// SpendLimits is every limit, oldest first.
	SpendLimits(ctx context.Context) ([]SpendLimit, error)
	// PutSpendLimit sets l's amount and settings on its scope and period,
	// creating the limit or overwriting the one there (keeping its id and
	// creation time), and returns it as stored.
	PutSpendLimit(ctx context.Context, l SpendLimit) (SpendLimit, error)
	// DeleteSpendLimit deletes the limit id; false when there is none.
	DeleteSpendLimit(ctx context.Context, id string) (bool, error)
}

// NewSpendLimitID is a new limit's id (spl_…, as Anthropic's).
func NewSpendLimitID() string { return "spl_" + strings.ToLower(rand.Text()) }

const spendLimitColumns = `id, scope, scope_id, period, amount_cents, settings, created_us, updated_us`

func (s *sqlStore) SpendLimits(ctx context.Context) ([]SpendLimit, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+spendLimitColumns+` FROM spend_limits ORDER BY created_us, id`)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading spend limits: %w", err)
	}
	defer rows.Close()
	var out []SpendLimit
	for rows.Next() {
		l, err := scanSpendLimit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

func scanSpendLimit(row interface{ Scan(...any) error }) (SpendLimit, error) {
	var l SpendLimit
	var amount sql.NullInt64
	var settings string
	var created, updated int64
	if err := row.Scan(&l.ID, &l.Scope, &l.ScopeID, &l.Period, &amount, &settings, &created, &updated); err != nil {
		return SpendLimit{}, fmt.Errorf("ledger: reading a spend limit: %w", err)
	}
	if amount.Valid {
		l.AmountCents = &amount.Int64
	}
	var st spendLimitSettings
	_ = json.Unmarshal([]byte(settings), &st) // written by this file only
	l.Downgrade, l.Bound = st.Downgrade, st.DowngradeBound
	l.CreatedAt, l.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return l, nil
}

func (s *sqlStore) PutSpendLimit(ctx context.Context, l SpendLimit) (SpendLimit, error) {
	if l.ID == "" {
		l.ID = NewSpendLimitID()
	}
	now := l.UpdatedAt
	if now.IsZero() {
		now = time.Now()
	}
	settings, _ := json.Marshal(spendLimitSettings{Downgrade: l.Downgrade, DowngradeBound: l.Bound})
	var amount sql.NullInt64
	if l.AmountCents != nil {
		amount = sql.NullInt64{Int64: *l.AmountCents, Valid: true}
	}
	return putSpendLimit(ctx, s.db, s.d.placeholder, l, amount, string(settings), now)
}

// execQuerier is a database or a transaction.
type execQuerier interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

func putSpendLimit(ctx context.Context, db execQuerier, p func(int) string, l SpendLimit, amount sql.NullInt64, settings string, now time.Time) (SpendLimit, error) {
	_, err := db.ExecContext(ctx, `INSERT INTO spend_limits (`+spendLimitColumns+`)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`, `+p(7)+`, `+p(8)+`)
ON CONFLICT (scope, scope_id, period) DO UPDATE SET amount_cents = excluded.amount_cents, settings = excluded.settings, updated_us = excluded.updated_us`,
		l.ID, l.Scope, l.ScopeID, l.Period, amount, settings, now.UnixMicro(), now.UnixMicro())
	if err != nil {
		return SpendLimit{}, fmt.Errorf("ledger: storing a spend limit: %w", err)
	}
	got, err := scanSpendLimit(db.QueryRowContext(ctx, `SELECT `+spendLimitColumns+` FROM spend_limits WHERE scope = `+p(1)+` AND scope_id = `+p(2)+` AND period = `+p(3),
		l.Scope, l.ScopeID, l.Period))
	if errors.Is(err, sql.ErrNoRows) {
		return SpendLimit{}, fmt.Errorf("ledger: the spend limit stored was deleted at once")
	}
	return got, err
}

func (s *sqlStore) DeleteSpendLimit(ctx context.Context, id string) (bool, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM spend_limits WHERE id = `+s.d.placeholder(1), id)
	if err != nil {
		return false, fmt.Errorf("ledger: deleting a spend limit: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// addScopeSpend adds r's cost to the spend of the organization, its
// person and their groups in the period p starting at start.
func addScopeSpend(m map[spendKey]int64, r *Record, p string, start int64) {
	k := spendKey{ScopeOrganization, OrganizationID, p, start}
	m[k] = plusSat(m[k], r.CostPicoUSD)
	if r.Person != "" {
		k = spendKey{ScopeUser, r.Person, p, start}
		m[k] = plusSat(m[k], r.CostPicoUSD)
	}
	for rest := r.Groups; rest != ""; {
		g, more, _ := strings.Cut(rest, "\n")
		rest = more
		if g != "" {
			k = spendKey{ScopeGroup, g, p, start}
			m[k] = plusSat(m[k], r.CostPicoUSD)
		}
	}
}

// GroupLines is groups as Record.Groups holds them.
func GroupLines(groups []string) string { return strings.Join(groups, "\n") }
