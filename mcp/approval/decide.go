package approval

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
)

// Who or what decided an approval (ledger.MCPApproval.Via).
const (
	ViaLink        = "link"        // a signed link from the chat message
	ViaAdmin       = "admin"       // the admin API: the dashboard or `caddy modelgate approvals`
	ViaElicitation = "elicitation" // the calling client asked its user
	ViaTimeout     = "timeout"     // nobody decided before the wait ended
	ViaCancelled   = "cancelled"   // the client stopped waiting
)

// NewID is a fresh approval id and link secret.
func NewID() (id, secretHex string) {
	var b [16]byte
	_, _ = rand.Read(b[:])
	var s [32]byte
	_, _ = rand.Read(s[:])
	return "apr_" + hex.EncodeToString(b[:]), hex.EncodeToString(s[:])
}

// Bind fills a's Binding: the digest of who called, which server and tool,
// the arguments' hash, the policy version and the expiry.
func Bind(a *ledger.MCPApproval) {
	h := sha256.New()
	for _, f := range []string{a.ID, a.KeyID, a.Person, a.Server, a.Tool, a.ArgsHash, a.PolicyVersion, fmt.Sprint(a.ExpiresAt.Unix())} {
		h.Write([]byte(f))
		h.Write([]byte{0})
	}
	a.Binding = hex.EncodeToString(h.Sum(nil))
}

// Decider decides approvals in the ledger and audit-logs each decision.
type Decider struct {
	Store ledger.MCPApprovalStore
	Audit audit.Recorder
	Now   func() time.Time
}

// ErrNotFound is an approval id the ledger does not have.
var ErrNotFound = errors.New("no such approval")

// Decide approves or denies pending approval id on behalf of by (a key
// id, a person, "chat link"), via one of the Via constants; source is the
// client's address for the audit log. It returns the approval as it is
// now, and ledger.ErrApprovalDecided when it was no longer pending.
func (d *Decider) Decide(ctx context.Context, id string, approve bool, by, via, source string) (ledger.MCPApproval, error) {
	state := ledger.ApprovalDenied
	if approve {
		state = ledger.ApprovalApproved
	}
	a, err := d.Store.DecideMCPApproval(ctx, id, state, by, via, d.now())
	if err != nil {
		if errors.Is(err, ledger.ErrApprovalDecided) && a.ID == "" {
			return a, ErrNotFound
		}
		return a, err
	}
	d.Record(ctx, a, state, source)
	return a, nil
}

// Record audit-logs an approval's request or decision (action
// mcp.approval.<what>).
func (d *Decider) Record(ctx context.Context, a ledger.MCPApproval, what, source string) {
	if d.Audit == nil {
		return
	}
	actor := a.DecidedBy
	if what == ledger.ApprovalPending {
		what, actor = "request", a.KeyID
	}
	d.Audit.Record(ctx, audit.Event{Time: d.now(), Actor: actor, Action: "mcp.approval." + what, Target: a.ID, Source: source,
		Fields: map[string]string{"server": a.Server, "tool": a.Tool, "key": a.KeyID, "person": a.Person, "args_sha256": a.ArgsHash,
			"policy_version": a.PolicyVersion, "via": a.Via, "expires": a.ExpiresAt.Format(time.RFC3339)}})
}

func (d *Decider) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}
