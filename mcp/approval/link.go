package approval

import (
	"errors"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// LinkHandler serves the chat message's links, Path + token, to anyone
// who has one: the token is the credential. GET shows the call and a
// button; only the POST the button sends decides, so a chat's link
// preview, which fetches every URL posted, never approves anything.
type LinkHandler struct {
	// Store is the ledger's approval table; nil answers 503.
	Store func() ledger.MCPApprovalStore
	// Decider decides with the store it is given.
	Decider func(ledger.MCPApprovalStore) *Decider
}

// Path is the links' prefix.
const Path = "/mcp-approvals/"

// Owns reports whether path is one of the links.
func Owns(path string) bool { return strings.HasPrefix(path, Path) }

var page = template.Must(template.New("approval").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>MCP approval</title>
<style>body{font:15px system-ui,sans-serif;max-width:42em;margin:3em auto;padding:0 1em}pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:.8em}</style></head>
<body><h1>{{.Title}}</h1>
{{if .A.ID}}<p>{{.Who}} asked to call <b>{{.A.Server}}/{{.A.Tool}}</b> with:</p><pre>{{.A.Args}}</pre>
<p>Approval {{.A.ID}} · arguments SHA-256 {{.A.ArgsHash}} · expires {{.Expires}}</p>{{end}}
{{if .Button}}<form method="post"><button type="submit">{{.Button}}</button></form>{{end}}
</body></html>
`))

type pageData struct {
	Title, Who, Expires, Button string
	A                           ledger.MCPApproval
}

func (h *LinkHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("X-Frame-Options", "DENY")
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPost {
		w.Header().Set("Allow", "GET, HEAD, POST")
		show(w, http.StatusMethodNotAllowed, pageData{Title: "Open this link in a browser."})
		return
	}
	var store ledger.MCPApprovalStore
	if h.Store != nil {
		store = h.Store()
	}
	if store == nil {
		show(w, http.StatusServiceUnavailable, pageData{Title: "The gateway's ledger is not open yet; try again in a moment."})
		return
	}
	link, err := Parse(strings.TrimPrefix(r.URL.Path, Path))
	if err != nil {
		show(w, http.StatusNotFound, pageData{Title: "This is not a valid approval link."})
		return
	}
	a, found, err := store.MCPApprovalByID(r.Context(), link.ID)
	if err != nil {
		show(w, http.StatusServiceUnavailable, pageData{Title: "The approval could not be read; try again in a moment."})
		return
	}
	if !found || !link.Verify(a.Secret, a.Binding) {
		show(w, http.StatusNotFound, pageData{Title: "This is not a valid approval link."})
		return
	}
	verb := "Deny"
	if link.Approve {
		verb = "Approve"
	}
	data := pageData{A: a, Who: a.KeyID, Expires: a.ExpiresAt.Format(time.RFC1123)}
	if a.Person != "" {
		data.Who = a.Person + " (key " + a.KeyID + ")"
	}
	if a.State != ledger.ApprovalPending || !time.Now().Before(a.ExpiresAt) {
		data.Title = closedTitle(a)
		show(w, http.StatusConflict, data)
		return
	}
	if r.Method != http.MethodPost {
		data.Title, data.Button = verb+" this MCP tool call?", verb
		show(w, http.StatusOK, data)
		return
	}
	got, err := h.Decider(store).Decide(r.Context(), a.ID, link.Approve, "chat link", ViaLink, r.RemoteAddr)
	if errors.Is(err, ledger.ErrApprovalDecided) {
		data.A, data.Title = got, closedTitle(got)
		show(w, http.StatusConflict, data)
		return
	}
	if err != nil {
		show(w, http.StatusServiceUnavailable, pageData{Title: "The decision could not be saved; try again in a moment."})
		return
	}
	data.A = got
	data.Title = "Denied: the call will not run."
	if link.Approve {
		data.Title = "Approved: the call runs once."
	}
	show(w, http.StatusOK, data)
}

// closedTitle says why an approval takes no decision any more.
func closedTitle(a ledger.MCPApproval) string {
	switch a.State {
	case ledger.ApprovalApproved:
		return "Already approved by " + a.DecidedBy + "; the call has not run yet."
	case ledger.ApprovalConsumed:
		return "Already approved by " + a.DecidedBy + " and used: an approval runs one call."
	case ledger.ApprovalDenied:
		return "Already denied by " + a.DecidedBy + "."
	}
	return "Expired: the call stopped waiting. The agent must call again for a new approval."
}

func show(w http.ResponseWriter, status int, d pageData) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	w.WriteHeader(status)
	_ = page.Execute(w, d)
}
