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

// Increase requests: a person at or near a spend limit asks for more,
// an approver (an admin, or a lead of one of their groups) approves,
// which writes the person's own limit, or denies. A request is resolved
// once: the UPDATE that resolves it requires it pending, so a second
// approval (another instance, a replayed chat link) finds nothing.

// The statuses of an increase request.
const (
	RequestPending  = "pending"
	RequestApproved = "approved"
	RequestDenied   = "denied"
	// RequestSuperseded is an older pending request of a person and
	// period that a ledger held beside a newer one before the database
	// enforced one (pendingRequestMigration).
	RequestSuperseded = "superseded"
)

// ErrIncreasePending is CreateIncreaseRequest's answer when the person
// already has a pending request for the period: one per person and
// period, enforced by the database so that two creates at once (two
// instances) cannot both store one.
var ErrIncreasePending = errors.New("ledger: the person already has a pending increase request for the period")

// pendingRequestMigration resolves, as superseded, every pending request
// of a person and period but the newest (ledgers from before it may hold
// several), then makes the database hold at most one: a partial unique
// index over the pending ones.
const pendingRequestMigration = `UPDATE spend_limit_increase_requests SET status = '` + RequestSuperseded + `', resolved_by = 'modelgate',
	resolved_us = (SELECT MIN(n.created_us) FROM spend_limit_increase_requests AS n WHERE n.person = spend_limit_increase_requests.person
		AND n.period = spend_limit_increase_requests.period AND n.status = '` + RequestPending + `' AND n.id <> spend_limit_increase_requests.id
		AND n.created_us >= spend_limit_increase_requests.created_us)
WHERE status = '` + RequestPending + `' AND EXISTS (SELECT 1 FROM spend_limit_increase_requests AS n WHERE n.person = spend_limit_increase_requests.person
	AND n.period = spend_limit_increase_requests.period AND n.status = '` + RequestPending + `'
	AND (n.created_us > spend_limit_increase_requests.created_us OR (n.created_us = spend_limit_increase_requests.created_us AND n.id > spend_limit_increase_requests.id)));
CREATE UNIQUE INDEX spend_limit_increase_requests_pending ON spend_limit_increase_requests (person, period) WHERE status = '` + RequestPending + `'`

// IncreaseRequest is one person's request for a higher spend limit.
type IncreaseRequest struct {
	ID, Person, Email string
	// Groups are the person's groups when they asked: which leads may
	// resolve it.
	Groups      []string
	Period      string
	AmountCents int64 // the limit asked for
	Reason      string
	Status      string
	CreatedAt   time.Time
	ResolvedAt  time.Time // zero while pending
	ResolvedBy  string
	// SpendLimitID is the limit an approval wrote.
	SpendLimitID string
	// LinkHash is the hex SHA-256 of the token in the approvers' chat
	// link, good until LinkExpires; the token itself is never stored.
	LinkHash    string
	LinkExpires time.Time
}

// IncreaseRequestStore keeps increase requests.
type IncreaseRequestStore interface {
	CreateIncreaseRequest(ctx context.Context, r IncreaseRequest) (IncreaseRequest, error)
	// IncreaseRequests is every request, newest first, at most max.
	IncreaseRequests(ctx context.Context, max int) ([]IncreaseRequest, error)
	// IncreaseRequest is the request id; false when there is none.
	IncreaseRequest(ctx context.Context, id string) (IncreaseRequest, bool, error)
	// PendingIncreaseRequest is person's pending request for period, the
	// newest when there are several; false when there is none.
	PendingIncreaseRequest(ctx context.Context, person, period string) (IncreaseRequest, bool, error)
	// ResolveIncreaseRequest moves the pending request id to status
	// (approved or denied) by by at at; approving writes limit (the
	// person's) in the same transaction. false: it was not pending.
	ResolveIncreaseRequest(ctx context.Context, id, status, by string, at time.Time, limit *SpendLimit) (bool, SpendLimit, error)
}

// NewIncreaseRequestID is a new request's id.
func NewIncreaseRequestID() string { return "splir_" + strings.ToLower(rand.Text()) }

const requestColumns = `id, person, email, groups_list, period, amount_cents, reason, status, created_us, resolved_us, resolved_by, spend_limit_id, link_hash, link_expires_us`

func (s *sqlStore) CreateIncreaseRequest(ctx context.Context, r IncreaseRequest) (IncreaseRequest, error) {
	if r.ID == "" {
		r.ID = NewIncreaseRequestID()
	}
	if r.CreatedAt.IsZero() {
		r.CreatedAt = time.Now().UTC()
	}
	r.Status = RequestPending
	groups, _ := json.Marshal(r.Groups)
	p := s.d.placeholder
	// The pending index refuses a second pending request of the person
	// and period; DO NOTHING makes that no row rather than a driver's
	// error to recognise.
	res, err := s.db.ExecContext(ctx, `INSERT INTO spend_limit_increase_requests (`+requestColumns+`)
VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`, `+p(7)+`, `+p(8)+`, `+p(9)+`, 0, '', '', `+p(10)+`, `+p(11)+`) ON CONFLICT DO NOTHING`,
		r.ID, r.Person, r.Email, string(groups), r.Period, r.AmountCents, r.Reason, r.Status, r.CreatedAt.UnixMicro(), r.LinkHash, r.LinkExpires.UnixMicro())
	if err != nil {
		return IncreaseRequest{}, fmt.Errorf("ledger: storing an increase request: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return IncreaseRequest{}, fmt.Errorf("ledger: storing an increase request: %w", err)
	} else if n == 0 {
		return IncreaseRequest{}, ErrIncreasePending
	}
	return r, nil
}

func scanRequest(row interface{ Scan(...any) error }) (IncreaseRequest, error) {
	var r IncreaseRequest
	var groups string
	var created, resolved, linkExpires int64
	if err := row.Scan(&r.ID, &r.Person, &r.Email, &groups, &r.Period, &r.AmountCents, &r.Reason, &r.Status, &created, &resolved, &r.ResolvedBy, &r.SpendLimitID,
		&r.LinkHash, &linkExpires); err != nil {
		return IncreaseRequest{}, err
	}
	_ = json.Unmarshal([]byte(groups), &r.Groups) // written by this file only
	r.CreatedAt, r.LinkExpires = time.UnixMicro(created).UTC(), time.UnixMicro(linkExpires).UTC()
	if resolved > 0 {
		r.ResolvedAt = time.UnixMicro(resolved).UTC()
	}
	return r, nil
}

func (s *sqlStore) IncreaseRequests(ctx context.Context, max int) ([]IncreaseRequest, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+requestColumns+` FROM spend_limit_increase_requests ORDER BY created_us DESC, id DESC LIMIT `+s.d.placeholder(1), max)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading increase requests: %w", err)
	}
	defer rows.Close()
	var out []IncreaseRequest
	for rows.Next() {
		r, err := scanRequest(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: reading increase requests: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *sqlStore) IncreaseRequest(ctx context.Context, id string) (IncreaseRequest, bool, error) {
	r, err := scanRequest(s.db.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM spend_limit_increase_requests WHERE id = `+s.d.placeholder(1), id))
	if errors.Is(err, sql.ErrNoRows) {
		return IncreaseRequest{}, false, nil
	}
	if err != nil {
		return IncreaseRequest{}, false, fmt.Errorf("ledger: reading an increase request: %w", err)
	}
	return r, true, nil
}

func (s *sqlStore) PendingIncreaseRequest(ctx context.Context, person, period string) (IncreaseRequest, bool, error) {
	p := s.d.placeholder
	r, err := scanRequest(s.db.QueryRowContext(ctx, `SELECT `+requestColumns+` FROM spend_limit_increase_requests
WHERE person = `+p(1)+` AND period = `+p(2)+` AND status = '`+RequestPending+`' ORDER BY created_us DESC, id DESC LIMIT 1`, person, period))
	if errors.Is(err, sql.ErrNoRows) {
		return IncreaseRequest{}, false, nil
	}
	if err != nil {
		return IncreaseRequest{}, false, fmt.Errorf("ledger: reading a pending increase request: %w", err)
	}
	return r, true, nil
}

func (s *sqlStore) ResolveIncreaseRequest(ctx context.Context, id, status, by string, at time.Time, limit *SpendLimit) (bool, SpendLimit, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, SpendLimit{}, fmt.Errorf("ledger: resolving an increase request: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	var stored SpendLimit
	if limit != nil {
		l := *limit
		if l.ID == "" {
			l.ID = NewSpendLimitID()
		}
		settings, _ := json.Marshal(spendLimitSettings{Downgrade: l.Downgrade, DowngradeBound: l.Bound})
		var amount sql.NullInt64
		if l.AmountCents != nil {
			amount = sql.NullInt64{Int64: *l.AmountCents, Valid: true}
		}
		if stored, err = putSpendLimit(ctx, tx, s.d.placeholder, l, amount, string(settings), at); err != nil {
			return false, SpendLimit{}, err
		}
	}
	p := s.d.placeholder
	res, err := tx.ExecContext(ctx, `UPDATE spend_limit_increase_requests SET status = `+p(1)+`, resolved_us = `+p(2)+`, resolved_by = `+p(3)+`, spend_limit_id = `+p(4)+`
WHERE id = `+p(5)+` AND status = '`+RequestPending+`'`, status, at.UnixMicro(), by, stored.ID, id)
	if err != nil {
		return false, SpendLimit{}, fmt.Errorf("ledger: resolving an increase request: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return false, SpendLimit{}, err // not pending: the limit is not written either
	}
	return true, stored, tx.Commit()
}
