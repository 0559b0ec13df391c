package admin

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/policy"
)

// An admin-role key whose MCP call waits for approval (an agent holding
// it), or an admin signed in as the person whose call it is, does not
// approve it through the admin API, as through a chat link; another
// admin does.
func TestAdminDoesNotApproveOwnMCPCall(t *testing.T) {
	sa := newSpendAdmin(t)
	st := sa.a.Store.(ledger.MCPApprovalStore)
	a := pendingAgentApproval(t, st)
	path := "/v1/organizations/mcp_approvals/" + a.ID + "/approve"
	for _, own := range []*policy.Identity{
		{KeyID: "agent", Person: "ann@example.com", Role: policy.RoleAdmin},
		{KeyID: "ann-session", Owner: "ann@example.com", Role: policy.RoleAdmin},
	} {
		if rec := sa.call(t, own, "POST", path, ""); rec.Code != 403 {
			t.Errorf("%s approves its own call: %d %s", own.KeyID, rec.Code, rec.Body)
		}
	}
	if got, _, _ := st.MCPApprovalByID(context.Background(), a.ID); got.State != ledger.ApprovalPending {
		t.Fatalf("after the refusals: %+v", got)
	}
	if rec := sa.call(t, adminID, "POST", path, ""); rec.Code != 200 {
		t.Errorf("another admin approving: %d %s", rec.Code, rec.Body)
	}
}

// unreadableApprovals is a ledger whose approvals cannot be read back.
type unreadableApprovals struct{ ledger.Store }

func (u unreadableApprovals) CreateMCPApproval(ctx context.Context, a ledger.MCPApproval) error {
	return u.Store.(ledger.MCPApprovalStore).CreateMCPApproval(ctx, a)
}
func (unreadableApprovals) MCPApprovalByID(context.Context, string) (ledger.MCPApproval, bool, error) {
	return ledger.MCPApproval{}, false, errors.New("database gone")
}
func (u unreadableApprovals) DecideMCPApproval(ctx context.Context, id, state, by, via string, now time.Time) (ledger.MCPApproval, error) {
	return u.Store.(ledger.MCPApprovalStore).DecideMCPApproval(ctx, id, state, by, via, now)
}
func (u unreadableApprovals) ConsumeMCPApproval(ctx context.Context, id string, now time.Time) (bool, error) {
	return u.Store.(ledger.MCPApprovalStore).ConsumeMCPApproval(ctx, id, now)
}
func (u unreadableApprovals) MCPApprovals(ctx context.Context, state string, limit int) ([]ledger.MCPApproval, error) {
	return u.Store.(ledger.MCPApprovalStore).MCPApprovals(ctx, state, limit)
}

// When the approval cannot be read for the own-call check, the admin API
// decides nothing (it skipped the check and decided before).
func TestAdminDecidesNoMCPCallItCannotCheck(t *testing.T) {
	sa := newSpendAdmin(t)
	st := sa.a.Store.(ledger.MCPApprovalStore)
	a := pendingAgentApproval(t, st)
	sa.a.Store = unreadableApprovals{sa.a.Store}
	if rec := sa.call(t, &policy.Identity{KeyID: "agent", Person: "ann@example.com", Role: policy.RoleAdmin}, "POST",
		"/v1/organizations/mcp_approvals/"+a.ID+"/approve", ""); rec.Code != 503 {
		t.Errorf("its own call, the approval unreadable: %d %s", rec.Code, rec.Body)
	}
	if got, _, _ := st.MCPApprovalByID(context.Background(), a.ID); got.State != ledger.ApprovalPending {
		t.Fatalf("decided without the check: %+v", got)
	}
}

// pendingAgentApproval stores a pending approval of a call by the key
// "agent" of ann@example.com.
func pendingAgentApproval(t *testing.T, st ledger.MCPApprovalStore) ledger.MCPApproval {
	t.Helper()
	now := time.Now().UTC()
	a := ledger.MCPApproval{CreatedAt: now, ExpiresAt: now.Add(time.Hour), KeyID: "agent", Person: "ann@example.com",
		Server: "internal", Tool: "deploy", ArgsHash: "h", Args: `{}`, State: ledger.ApprovalPending}
	a.ID, a.Secret = approval.NewID()
	approval.Bind(&a)
	if err := st.CreateMCPApproval(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}
