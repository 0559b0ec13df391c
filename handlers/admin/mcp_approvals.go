package admin

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/policy"
)

// The MCP approvals: the dashboard's pending list and `caddy modelgate
// approvals` read and decide them here, with the same Decider as the chat
// links; the waiting call reads the decision back from the ledger.

// approvalStore is the ledger's approval table, or an answer saying why
// there is none.
func (a *Handler) approvalStore(w http.ResponseWriter, r *http.Request, decide bool) (ledger.MCPApprovalStore, bool) {
	id := policy.IdentityFrom(r.Context())
	switch {
	case id == nil:
		fail(w, http.StatusUnauthorized, "missing or unknown API key")
		return nil, false
	case decide && id.Role != policy.RoleAdmin:
		fail(w, http.StatusForbidden, "deciding an MCP approval needs the gateway's admin key or an admin sign-in")
		return nil, false
	case !id.ReadsAll():
		fail(w, http.StatusForbidden, "MCP approvals need the gateway's admin key or an admin or auditor sign-in")
		return nil, false
	}
	s, ok := a.Store.(ledger.MCPApprovalStore)
	if !ok && a.Controls != nil {
		// The app's ledger, once open, is the controls' store too.
		s, ok = a.Controls.WaitStore(r.Context()).(ledger.MCPApprovalStore)
	}
	if !ok {
		w.Header().Set("Retry-After", "5")
		fail(w, http.StatusServiceUnavailable, "the ledger database that keeps MCP approvals is not open yet; retry")
		return nil, false
	}
	return s, true
}

// listApprovals answers GET /v1/organizations/mcp_approvals?state=pending&limit=100.
func (a *Handler) listApprovals(w http.ResponseWriter, r *http.Request) {
	s, ok := a.approvalStore(w, r, false)
	if !ok {
		return
	}
	q := r.URL.Query()
	state := q.Get("state")
	switch state {
	case "", ledger.ApprovalPending, ledger.ApprovalApproved, ledger.ApprovalDenied, ledger.ApprovalExpired, ledger.ApprovalConsumed:
	default:
		fail(w, http.StatusBadRequest, "state: must be pending, approved, denied, expired or consumed")
		return
	}
	limit := 100
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			fail(w, http.StatusBadRequest, "limit: must be an integer from 1 to 1000")
			return
		}
		limit = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	list, err := s.MCPApprovals(ctx, state, limit)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "reading the MCP approvals failed; retry")
		return
	}
	out := adminapi.MCPApprovalList{Data: make([]adminapi.MCPApproval, 0, len(list))}
	now := a.now()
	for _, ap := range list {
		out.Data = append(out.Data, approvalJSON(ap, now))
	}
	writeJSON(w, out)
}

// decideApproval answers POST …/mcp_approvals/{id}/approve and …/deny.
func (a *Handler) decideApproval(approve bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s, ok := a.approvalStore(w, r, true)
		if !ok {
			return
		}
		caller := policy.IdentityFrom(r.Context())
		by := caller.PersonID()
		if by == "" {
			by = caller.KeyID
		}
		// An admin-role key is as likely an agent's as a person's: the
		// key or person whose call waits does not approve it (as by a
		// link, approval.LinkHandler).
		// A lookup that fails decides nothing: the check must not be
		// skipped because the ledger did not answer.
		own, found, err := s.MCPApprovalByID(r.Context(), r.PathValue("id"))
		switch {
		case err != nil:
			fail(w, http.StatusServiceUnavailable, "reading the MCP approval failed; retry")
			return
		case !found:
			fail(w, http.StatusNotFound, "no MCP approval "+strconv.Quote(r.PathValue("id")))
			return
		case approval.OwnCall(own, caller.KeyID, caller.PersonID()):
			fail(w, http.StatusForbidden, "MCP approval "+own.ID+" holds your own call: another person decides it")
			return
		}
		d := &approval.Decider{Store: s, Audit: a.Audit, Now: a.Now}
		got, err := d.Decide(r.Context(), r.PathValue("id"), approve, by, approval.ViaAdmin, r.RemoteAddr)
		switch {
		case errors.Is(err, approval.ErrNotFound):
			fail(w, http.StatusNotFound, "no MCP approval "+strconv.Quote(r.PathValue("id")))
		case errors.Is(err, ledger.ErrApprovalDecided):
			fail(w, http.StatusConflict, "MCP approval "+got.ID+" is "+approvalJSON(got, a.now()).State+", not pending: an approval is decided once and runs one call")
		case err != nil:
			fail(w, http.StatusServiceUnavailable, "saving the decision failed; retry")
		default:
			writeJSON(w, approvalJSON(got, a.now()))
		}
	}
}

// approvalJSON is an approval as the API shows it; a pending one past its
// expiry is shown expired (its waiting call is ending).
func approvalJSON(ap ledger.MCPApproval, now time.Time) adminapi.MCPApproval {
	out := adminapi.MCPApproval{ID: ap.ID, Type: "mcp_approval", CreatedAt: ap.CreatedAt.Format(time.RFC3339), ExpiresAt: ap.ExpiresAt.Format(time.RFC3339),
		APIKeyID: ap.KeyID, Person: ap.Person, Workspace: ap.Workspace, Server: ap.Server, Tool: ap.Tool, Arguments: ap.Args,
		ArgumentsSHA256: ap.ArgsHash, PolicyVersion: ap.PolicyVersion, State: ap.State, DecidedBy: ap.DecidedBy, Via: ap.Via}
	if out.State == ledger.ApprovalPending && !now.Before(ap.ExpiresAt) {
		out.State = ledger.ApprovalExpired
	}
	if !ap.DecidedAt.IsZero() {
		s := ap.DecidedAt.Format(time.RFC3339)
		out.DecidedAt = &s
	}
	return out
}
