package handlers

import (
	"encoding/json"
	"net/http"
	"sort"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// serveMe answers GET /v1/me: who the key is, what it may use, its rates
// and the spend against each budget that applies this period (the
// session's too when the request names one).
func (g *Gateway) serveMe(w http.ResponseWriter, r *http.Request) {
	id := policy.IdentityFrom(r.Context())
	if id == nil {
		(&providers.APIError{Status: http.StatusUnauthorized, Message: "missing API key"}).Write(w, g.familyOf(nil, r))
		return
	}
	models := g.allowedAliases(id)
	if models == nil {
		models = []string{}
	}
	sort.Strings(models)
	me := struct {
		ID          string                `json:"id"`
		Type        string                `json:"type"`
		WorkspaceID *string               `json:"workspace_id"`
		Role        string                `json:"role"`
		Models      []string              `json:"models"`
		RPM         *int64                `json:"rpm"`
		TPM         *int64                `json:"tpm"`
		MaxParallel *int64                `json:"max_parallel"`
		Budgets     []policy.BudgetStatus `json:"budgets"`
	}{ID: id.KeyID, Type: "api_key", Role: string(id.Role), Models: models,
		RPM: positive(id.Limits.RPM), TPM: positive(id.Limits.TPM), MaxParallel: positive(id.Limits.MaxParallel),
		Budgets: g.opts.Budgets.Status(id, g.opts.Controls.WorkspaceLimits(id.Workspace), sessionOf(r))}
	if id.Workspace != "" {
		ws := id.Workspace
		me.WorkspaceID = &ws
	}
	b, _ := json.Marshal(me)
	writeJSON(w, http.StatusOK, b)
}

// sessionOf is the session a request's headers name.
func sessionOf(r *http.Request) string {
	id, _ := resolveSession(sessionHints(r.Header), nil, callerFormat(r), providers.RequestInfo{})
	return id
}

// positive is n, or nil (JSON null: no limit) when it is not above zero.
func positive(n int64) *int64 {
	if n <= 0 {
		return nil
	}
	return &n
}
