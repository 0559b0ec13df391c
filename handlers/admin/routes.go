package admin

import (
	"net/http"

	"github.com/modelgate/modelgate/adminapi"

	"github.com/modelgate/modelgate/providers"
)

// family is the error format of every API answer: this is Anthropic's
// Admin API, whichever provider the gateway serves.
const family = providers.FormatAnthropic

func writeError(w http.ResponseWriter, e *providers.APIError) { e.Write(w, family) }

func fail(w http.ResponseWriter, status int, msg string) {
	writeError(w, &providers.APIError{Status: status, Message: msg})
}

// routes is the API's route table. A key's or workspace's path with a
// trailing slash names the same thing, as it always has. Each resource
// also has method-less patterns behind the same checks as its routes, so
// that a path or method no route takes is answered in the API's own error
// family (a bare ServeMux would answer in plain text): under the keys and
// workspaces a 405 for a known path and a 404 for a deeper one; a report
// or the sessions list a 405; any other path a 404.
func (a *Handler) routes() *http.ServeMux {
	m := http.NewServeMux()
	for _, rt := range []struct {
		pattern string
		h       http.HandlerFunc
		slash   bool // also with a trailing slash
	}{
		{"GET /v1/organizations/api_keys", a.controls(a.listKeys), true},
		{"POST /v1/organizations/api_keys", a.controls(a.createKey), true},
		{"GET /v1/organizations/api_keys/{id}", a.controls(a.getKey), true},
		{"POST /v1/organizations/api_keys/{id}", a.controls(a.updateKey), true},
		{"GET /v1/organizations/workspaces", a.controls(a.listWorkspaces), true},
		{"POST /v1/organizations/workspaces", a.controls(a.createWorkspace), true},
		{"GET /v1/organizations/workspaces/{id}", a.controls(a.getWorkspace), true},
		{"POST /v1/organizations/workspaces/{id}", a.controls(a.updateWorkspace), true},
		{"POST /v1/organizations/workspaces/{id}/archive", a.controls(a.archiveWorkspace), false},
		{"GET /v1/organizations/sessions", requireCaller(a.serveSessions), false},
		{"DELETE " + SessionsPath + "/{id}/agent_reported", requireCaller(a.deleteAgentReported), false},
		{"POST " + SessionsPath + "/{id}/resume", requireCaller(a.resumeSession), false},
		{"GET " + BreakerReportPath, requireCaller(a.breakerReport), false},
		// A GET pattern takes HEAD too: the reports answer it.
		{"GET /v1/organizations/usage_report/messages", a.reportCaller(a.report), false},
		{"GET /v1/organizations/cost_report", a.reportCaller(a.report), false},
		{"GET /v1/organizations/usage_report/claude_code", a.reportCaller(a.claudeCode), false},
		{"GET " + AuditLogPath, requireCaller(a.auditLog), false},
		{"GET " + MCPReportPath, a.reportCaller(a.fromLedger), false},
		{"GET " + WorkReportPath, requireCaller(a.serveWork), false},
		{"GET " + SecretsReportPath, a.reportCaller(a.fromLedger), false},
		{"GET " + adminapi.SpendLimitsPath, a.spendCaller(a.listSpendLimits), false},
		{"POST " + adminapi.SpendLimitsPath, a.spendCaller(a.setSpendLimit), false},
		{"GET " + adminapi.EffectiveLimitsPath, a.spendCaller(a.effectiveLimits), false},
		{"GET " + adminapi.SpendLimitsPath + "/{id}", a.spendCaller(a.getSpendLimit), false},
		{"DELETE " + adminapi.SpendLimitsPath + "/{id}", notOnEffective(a.spendCaller(a.deleteSpendLimit)), false},
		{"GET " + adminapi.IncreaseRequestsPath, a.spendCaller(a.listIncreaseRequests), false},
		{"POST " + adminapi.IncreaseRequestsPath, a.spendCaller(a.createIncreaseRequest), false},
		{"GET " + adminapi.IncreaseRequestsPath + "/{id}", a.spendCaller(a.getIncreaseRequest), false},
		{"POST " + adminapi.IncreaseRequestsPath + "/{id}/approve", a.spendCaller(a.approveIncreaseRequest), false},
		{"POST " + adminapi.IncreaseRequestsPath + "/{id}/deny", a.spendCaller(a.denyIncreaseRequest), false},
		{"GET " + adminapi.MCPApprovalsPath, a.listApprovals, false},
		{"POST " + adminapi.MCPApprovalsPath + "/{id}/approve", a.decideApproval(true), false},
		{"POST " + adminapi.MCPApprovalsPath + "/{id}/deny", a.decideApproval(false), false},
	} {
		m.HandleFunc(rt.pattern, rt.h)
		if rt.slash {
			m.HandleFunc(rt.pattern+"/{$}", rt.h)
		}
	}

	// What the routes do not take.
	controlsNotAllowed := a.controls(notAllowed("GET, POST", "GET or POST", true))
	for _, base := range []string{keysPath, workspacesPath} {
		for _, p := range []string{base, base + "/{$}", base + "/{id}", base + "/{id}/{$}"} {
			m.HandleFunc("HEAD "+p, controlsNotAllowed) // not the GET route's
			m.HandleFunc(p, controlsNotAllowed)
		}
		m.HandleFunc(base+"/", a.controls(noControlsEndpoint))
	}
	m.HandleFunc(workspacesPath+"/{id}/archive", controlsNotAllowed)
	sessionsNotAllowed := requireCaller(notAllowed("GET", "GET", false))
	m.HandleFunc("HEAD "+SessionsPath, sessionsNotAllowed)
	m.HandleFunc(SessionsPath, sessionsNotAllowed)
	m.HandleFunc(SessionsPath+"/{id}/agent_reported", requireCaller(notAllowed("DELETE", "DELETE", false)))
	m.HandleFunc(SessionsPath+"/{id}/resume", requireCaller(notAllowed("POST", "POST", false)))
	m.HandleFunc(BreakerReportPath, requireCaller(notAllowed("GET, HEAD", "GET", false)))
	for _, p := range []string{UsageReportPath, CostReportPath, ClaudeCodeReportPath, MCPReportPath, WorkReportPath, SecretsReportPath} {
		m.HandleFunc(p, a.reportCaller(notAllowed("GET, HEAD", "GET", false)))
	}
	// A limit's path and the effective report's share one method-less
	// pattern ("/effective" alone would conflict with "GET …/{id}").
	m.HandleFunc(adminapi.SpendLimitsPath+"/{id}", requireCaller(func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "effective" {
			notAllowed("GET, HEAD", "GET", false)(w, r)
			return
		}
		notAllowed("GET, HEAD, DELETE", "GET or DELETE", false)(w, r)
	}))
	for p, allow := range map[string]string{adminapi.SpendLimitsPath: "GET, POST", adminapi.IncreaseRequestsPath: "GET, POST",
		adminapi.IncreaseRequestsPath + "/{id}": "GET", adminapi.IncreaseRequestsPath + "/{id}/approve": "POST",
		adminapi.IncreaseRequestsPath + "/{id}/deny": "POST"} {
		m.HandleFunc(p, requireCaller(notAllowed(allow, allow, false)))
	}
	auditNotAllowed := requireCaller(notAllowed("GET", "GET", false))
	m.HandleFunc("HEAD "+AuditLogPath, auditNotAllowed)
	m.HandleFunc(AuditLogPath, auditNotAllowed)
	m.HandleFunc(adminapi.MCPApprovalsPath, requireCaller(notAllowed("GET", "GET", false)))
	for _, verb := range []string{"approve", "deny"} {
		m.HandleFunc(adminapi.MCPApprovalsPath+"/{id}/"+verb, requireCaller(notAllowed("POST", "POST", false)))
	}
	m.HandleFunc("/", noEndpoint)
	return m
}

// notOnEffective keeps DELETE …/spend_limits/{id} off the effective
// report's path, which is no limit's id.
func notOnEffective(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("id") == "effective" {
			requireCaller(notAllowed("GET, HEAD", "GET", false))(w, r)
			return
		}
		next(w, r)
	}
}

// notAllowed answers a method a resource does not take; onPath names the
// path in the message.
func notAllowed(allow, use string, onPath bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		on := ""
		if onPath {
			on = " on " + r.URL.Path
		}
		fail(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed"+on+"; use "+use)
	}
}

// noEndpoint answers a path the API does not have, quoting at most 200
// bytes of it.
func noEndpoint(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if len(p) > 200 {
		p = p[:200] + "…"
	}
	fail(w, http.StatusNotFound, "no endpoint for "+r.Method+" "+p+" on this gateway")
}

// noControlsEndpoint is noEndpoint under the keys and workspaces, which
// quote the path whole.
func noControlsEndpoint(w http.ResponseWriter, r *http.Request) {
	fail(w, http.StatusNotFound, "no endpoint for "+r.Method+" "+r.URL.Path+" on this gateway")
}
