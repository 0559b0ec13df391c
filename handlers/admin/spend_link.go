package admin

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// SpendLinkPath is where the approvers' chat links point.
const SpendLinkPath = policy.SpendLinkPath

// The approvers' chat link. The chat that carries it is also where the
// person asking is told the outcome, so the link is no credential on its
// own: opening it (GET, as a chat's link preview also does) serves a page
// that shows nothing and approves nothing; the page signs the approver in
// (a dashboard session, or the gateway's admin key pasted there), shows
// the request through the API, and its buttons POST the link's token back
// with the approver's credentials. The POST resolves the request only for
// a caller who may (mayResolve: an admin, or a lead of one of the person's
// groups, never the person), with the token unexpired, once: the request
// leaves pending in the same statement, and the token expires with
// linkTTL. The resolution is the approver's, in resolved_by and the audit
// log.

var linkPage = template.Must(template.New("link").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Spend limit request</title><link rel="stylesheet" href="/ui/style.css"><link rel="icon" href="/ui/favicon.svg" type="image/svg+xml"></head>
<body><main id="spend-link" data-id="{{.}}">
<h1>Spend limit request</h1>
<p id="link-status">Loading…</p>
<div id="link-request" hidden></div>
<div id="link-actions" hidden><button type="button" id="link-approve">Approve</button> <button type="button" id="link-deny">Deny</button></div>
<form id="link-signin" hidden><p>Approving needs an approver signed in: an admin, or a lead of the person's group.</p>
<p><a id="link-idp" hidden>Sign in</a></p>
<p><label>or the gateway's admin key <input id="link-key" type="password" autocomplete="off"></label> <button type="submit">Use key</button></p></form>
</main><script src="/ui/spend-link.js"></script></body></html>`))

// serveSpendLink answers the chat link: GET its page, POST its decision.
func (a *Handler) serveSpendLink(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("Referrer-Policy", "no-referrer")
	id := strings.TrimPrefix(r.URL.Path, SpendLinkPath)
	if id == "" || strings.Contains(id, "/") {
		fail(w, http.StatusNotFound, "no such request")
		return
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		h.Set("Content-Security-Policy", uiCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Content-Type", "text/html; charset=utf-8")
		_ = linkPage.Execute(w, id)
	case http.MethodPost:
		a.spendCaller(func(w http.ResponseWriter, r *http.Request, st spendStore) { a.resolveByLink(w, r, st, id) })(w, r)
	default:
		h.Set("Allow", "GET, HEAD, POST")
		fail(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed on the approvers' link; use GET or POST")
	}
}

// resolveByLink answers the link page's POST {"token", "action"}: the
// signed-in approver's decision, with the link's token.
func (a *Handler) resolveByLink(w http.ResponseWriter, r *http.Request, st spendStore, id string) {
	in, ok := readBody(w, r, strictly[adminapi.SpendLinkDecision])
	if !ok {
		return
	}
	req, found, err := st.IncreaseRequest(r.Context(), id)
	switch {
	case err != nil:
		storeFailed(w, err)
		return
	case !found || !linkTokenOK(req, in.Token, a.now()):
		// One answer for all: an unknown id, a wrong token and an
		// expired one look alike.
		fail(w, http.StatusForbidden, "this link is not valid or has expired; use the dashboard or `caddy modelgate requests`")
		return
	}
	caller := policy.IdentityFrom(r.Context())
	if !a.mayResolve(caller, req) {
		if caller.PersonID() == req.Person {
			fail(w, http.StatusForbidden, "this is your own request: another approver decides (an admin, or another lead of one of your groups)")
			return
		}
		fail(w, http.StatusForbidden, "deciding this request needs the gateway's admin key, an admin sign-in, or a lead of one of "+req.Person+"'s groups")
		return
	}
	var limit *ledger.SpendLimit
	status := ledger.RequestDenied
	switch in.Action {
	case "approve":
		amount := req.AmountCents
		status, limit = ledger.RequestApproved, &ledger.SpendLimit{Scope: ledger.ScopeUser, ScopeID: req.Person, Period: req.Period, AmountCents: &amount}
	case "deny":
	default:
		fail(w, http.StatusBadRequest, "action: approve or deny")
		return
	}
	a.resolve(w, r, st, req, status, resolverOf(caller), limit, false)
}
