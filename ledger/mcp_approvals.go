package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// MCP tool calls that need a person's approval (mcp/approval.go) wait on
// a row of mcp_approvals: the instance serving the call writes it pending,
// any instance decides it (a chat link, the dashboard, the CLI, the
// calling client's elicitation), and the waiting instance reads the
// decision back and consumes it. Every change is one conditional UPDATE,
// so two deciders, or a decision racing the wait's expiry, cannot both
// win, and an approval is consumed once.

// The states of an approval. Pending moves to approved, denied or expired
// (the wait ended first); approved moves to consumed when the call runs.
const (
	ApprovalPending  = "pending"
	ApprovalApproved = "approved"
	ApprovalDenied   = "denied"
	ApprovalExpired  = "expired"
	ApprovalConsumed = "consumed"
)

// ErrApprovalDecided is returned by DecideMCPApproval when the approval is
// no longer pending (decided, consumed or expired): the decision is not
// taken.
var ErrApprovalDecided = errors.New("approval is no longer pending")

// MCPApproval is one approval request: what it is bound to, and its state.
type MCPApproval struct {
	ID        string
	CreatedAt time.Time
	ExpiresAt time.Time
	// The caller: key, the person who owns it (may be empty), workspace,
	// MCP session.
	KeyID, Person, Workspace, Session string
	Server, Tool                      string
	// ArgsHash is the hex SHA-256 of the canonical arguments; Args is
	// their canonical JSON as the approver sees it (bounded by the
	// caller).
	ArgsHash, Args string
	// PolicyVersion names the approval rule that applied; a changed rule
	// makes older approvals void.
	PolicyVersion string
	// Binding is the digest of everything above the approval is bound to;
	// signed links carry a MAC over it.
	Binding string
	// Secret keys the MACs of this approval's links, hex (never shown).
	Secret    string
	State     string
	DecidedBy string
	// Via is how it was decided: link, dashboard, cli, elicitation, timeout.
	Via       string
	DecidedAt time.Time
}

const approvalColumns = `id, created_us, expires_us, key_id, person, workspace, session_id, server, tool, args_hash, args,
	policy_version, binding, secret, state, decided_by, via, decided_us`

func scanApproval(row interface{ Scan(...any) error }) (MCPApproval, error) {
	var a MCPApproval
	var created, expires, decided int64
	err := row.Scan(&a.ID, &created, &expires, &a.KeyID, &a.Person, &a.Workspace, &a.Session, &a.Server, &a.Tool, &a.ArgsHash, &a.Args,
		&a.PolicyVersion, &a.Binding, &a.Secret, &a.State, &a.DecidedBy, &a.Via, &decided)
	a.CreatedAt, a.ExpiresAt = time.UnixMicro(created).UTC(), time.UnixMicro(expires).UTC()
	if decided > 0 {
		a.DecidedAt = time.UnixMicro(decided).UTC()
	}
	return a, err
}

// CreateMCPApproval stores a pending approval.
func (s *sqlStore) CreateMCPApproval(ctx context.Context, a MCPApproval) error {
	p := s.d.placeholder
	_, err := s.db.ExecContext(ctx, `INSERT INTO mcp_approvals (`+approvalColumns+`) VALUES (`+
		p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`, `+p(7)+`, `+p(8)+`, `+p(9)+`, `+p(10)+`, `+p(11)+`, `+
		p(12)+`, `+p(13)+`, `+p(14)+`, `+p(15)+`, '', '', 0)`,
		a.ID, a.CreatedAt.UnixMicro(), a.ExpiresAt.UnixMicro(), a.KeyID, a.Person, a.Workspace, a.Session, a.Server, a.Tool, a.ArgsHash, a.Args,
		a.PolicyVersion, a.Binding, a.Secret, ApprovalPending)
	return err
}

// MCPApprovalByID reads one approval; found is false when there is none.
func (s *sqlStore) MCPApprovalByID(ctx context.Context, id string) (a MCPApproval, found bool, err error) {
	a, err = scanApproval(s.db.QueryRowContext(ctx, `SELECT `+approvalColumns+` FROM mcp_approvals WHERE id = `+s.d.placeholder(1), id))
	if errors.Is(err, sql.ErrNoRows) {
		return MCPApproval{}, false, nil
	}
	return a, err == nil, err
}

// DecideMCPApproval moves a pending, unexpired approval to state
// (approved, denied or expired), recording who decided and how. It
// returns ErrApprovalDecided when the approval was not pending (or had
// expired, unless state is expired), and the row as it is after the call.
func (s *sqlStore) DecideMCPApproval(ctx context.Context, id, state, by, via string, now time.Time) (MCPApproval, error) {
	p := s.d.placeholder
	q := `UPDATE mcp_approvals SET state = ` + p(1) + `, decided_by = ` + p(2) + `, via = ` + p(3) + `, decided_us = ` + p(4) +
		` WHERE id = ` + p(5) + ` AND state = '` + ApprovalPending + `'`
	args := []any{state, by, via, now.UnixMicro(), id}
	if state != ApprovalExpired {
		q += ` AND expires_us > ` + p(6)
		args = append(args, now.UnixMicro())
	}
	res, err := s.db.ExecContext(ctx, q, args...)
	if err != nil {
		return MCPApproval{}, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return MCPApproval{}, err
	}
	a, found, err := s.MCPApprovalByID(ctx, id)
	if err != nil {
		return MCPApproval{}, err
	}
	if !found || n == 0 {
		return a, ErrApprovalDecided
	}
	return a, nil
}

// ConsumeMCPApproval moves an approved, unexpired approval to consumed;
// ok is false when it was not approved, already consumed, or expired, so
// an approval runs one call at most.
func (s *sqlStore) ConsumeMCPApproval(ctx context.Context, id string, now time.Time) (bool, error) {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `UPDATE mcp_approvals SET state = '`+ApprovalConsumed+`' WHERE id = `+p(1)+
		` AND state = '`+ApprovalApproved+`' AND expires_us > `+p(2), id, now.UnixMicro())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// MCPApprovals lists approvals newest first: those in state (every state
// when empty), at most limit. Pending ones past their expiry are listed as
// they are stored; the waiting instance marks them expired when its wait
// ends.
func (s *sqlStore) MCPApprovals(ctx context.Context, state string, limit int) ([]MCPApproval, error) {
	p := s.d.placeholder
	q := `SELECT ` + approvalColumns + ` FROM mcp_approvals`
	var args []any
	if state != "" {
		q += ` WHERE state = ` + p(1)
		args = append(args, state)
	}
	q += ` ORDER BY created_us DESC, id LIMIT ` + p(len(args)+1)
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MCPApproval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// MCPApprovalPurger deletes old approvals (with the app's retention; the
// audit log keeps every decision).
type MCPApprovalPurger interface {
	PurgeMCPApprovals(ctx context.Context, cutoff time.Time) (int64, error)
}

// PurgeMCPApprovals deletes approvals created before cutoff.
func (s *sqlStore) PurgeMCPApprovals(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_approvals WHERE created_us < `+s.d.placeholder(1), cutoff.UnixMicro())
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// MCPApprovalStore is what the MCP gateway's approvals need of the ledger.
type MCPApprovalStore interface {
	CreateMCPApproval(ctx context.Context, a MCPApproval) error
	MCPApprovalByID(ctx context.Context, id string) (MCPApproval, bool, error)
	DecideMCPApproval(ctx context.Context, id, state, by, via string, now time.Time) (MCPApproval, error)
	ConsumeMCPApproval(ctx context.Context, id string, now time.Time) (bool, error)
	MCPApprovals(ctx context.Context, state string, limit int) ([]MCPApproval, error)
}
