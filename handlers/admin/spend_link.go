package admin

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
)

// SpendLinkPath is where the approvers' chat links point.
const SpendLinkPath = policy.SpendLinkPath

// The approvers' chat link. Opening it (GET, as a chat's link preview
// also does) only shows the request and two buttons; the buttons POST
// the token back, which approves or denies once: the request leaves
// pending in the same statement, and the token expires with linkTTL.

var linkPage = template.Must(template.New("link").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<meta name="referrer" content="no-referrer"><title>Spend limit request</title></head>
<body style="font-family:system-ui;max-width:36em;margin:2em auto">
<h1>Spend limit request</h1>
{{if .Done}}<p>{{.Done}}</p>{{else}}
<p><b>{{.Person}}</b> asks for a {{.Period}} spend limit of <b>{{.Amount}}</b>.</p>
{{if .Reason}}<p>Reason: {{.Reason}}</p>{{end}}
<form method="post"><input type="hidden" name="token" value="{{.Token}}">
<button name="action" value="approve">Approve</button>
<button name="action" value="deny">Deny</button></form>{{end}}
</body></html>`))

type linkView struct {
	Person, Period, Amount, Reason, Token, Done string
}

// serveSpendLink answers the chat link.
func (a *Handler) serveSpendLink(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	var st spendStore
	if a.Spend.Store != nil {
		st, _ = a.Spend.Store().(spendStore)
	}
	id := strings.TrimPrefix(r.URL.Path, SpendLinkPath)
	if st == nil || id == "" || strings.Contains(id, "/") {
		http.Error(w, "no such request", http.StatusNotFound)
		return
	}
	// The link carries its token as ?key=, which the access log filter
	// docs/team-gateway.md gives already redacts.
	token := r.URL.Query().Get("key")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 4096)
		if err := r.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		token = r.PostForm.Get("token")
	}
	req, found, err := st.IncreaseRequest(r.Context(), id)
	switch {
	case err != nil:
		http.Error(w, "the ledger database did not answer; retry", http.StatusServiceUnavailable)
		return
	case !found || !linkTokenOK(req, token, a.now()):
		// One answer for all: an unknown id, a wrong token and an
		// expired one look alike.
		http.Error(w, "this link is not valid or has expired; use the dashboard or `caddy modelgate requests`", http.StatusForbidden)
		return
	}
	v := linkView{Person: req.Person, Period: req.Period, Amount: money.Dollars(req.AmountCents), Reason: req.Reason, Token: token}
	if req.Status != ledger.RequestPending {
		v.Done = "This request was already " + req.Status + "."
	}
	if r.Method == http.MethodPost && v.Done == "" {
		var limit *ledger.SpendLimit
		status := ledger.RequestDenied
		switch r.PostForm.Get("action") {
		case "approve":
			amount := req.AmountCents
			status, limit = ledger.RequestApproved, &ledger.SpendLimit{Scope: ledger.ScopeUser, ScopeID: req.Person, Period: req.Period, AmountCents: &amount}
		case "deny":
		default:
			http.Error(w, "action: approve or deny", http.StatusBadRequest)
			return
		}
		rec := &statusRecorder{ResponseWriter: w}
		a.resolve(rec, r, st, req, status, chatLinkActor, limit, false)
		if rec.status != http.StatusOK {
			return
		}
		v.Done = "Done: the request is " + status + "."
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = linkPage.Execute(w, v)
}

// statusRecorder keeps resolve's JSON answer to itself unless it failed.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	if code != http.StatusOK {
		s.ResponseWriter.WriteHeader(code)
	}
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if s.status != http.StatusOK {
		return s.ResponseWriter.Write(b)
	}
	return len(b), nil
}
