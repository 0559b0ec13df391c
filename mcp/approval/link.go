package approval

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// LinkHandler serves the chat message's links, Path + token. The chat
// that carries them is read by the person whose agent asks, so the token
// alone decides nothing (as the spend-increase links since hostile review
// 4): GET, which anyone with the link and a chat's link preview may do,
// shows the call and a button; only the button's POST decides, and only
// with an approver signed in (a dashboard session, or a key presented)
// who is not the caller's own person or key. The decision is the
// approver's, in decided_by and the audit log.
type LinkHandler struct {
	// Store is the ledger's approval table; nil answers 503.
	Store func() ledger.MCPApprovalStore
	// Decider decides with the store it is given.
	Decider func(ledger.MCPApprovalStore) *Decider
	// Approver reads who a POST is signed in as; nil, or a nil answer, is
	// nobody, and nobody decides.
	Approver func(r *http.Request) *Approver
	// SignInPath is where a browser signs in and comes back
	// (?return=<link>), offered when SignInStatus ({"enabled": bool})
	// says the site has a sign-in; "" offers only a key.
	SignInPath, SignInStatus string
}

// Approver is who sends a link's POST.
type Approver struct {
	// Person is who signed in, or whom the key was minted for; "" for a
	// key of no one.
	Person string
	KeyID  string
	// Admin is the gateway's admin role; Auditor reads and never decides.
	Admin, Auditor bool
}

// refusal says why ap may not decide a, or "".
func (ap *Approver) refusal(a ledger.MCPApproval) string {
	switch {
	case ap.Auditor:
		return "Auditors read approvals; an approver or an admin decides."
	case OwnCall(a, ap.KeyID, ap.Person):
		return "This is your own call: another person approves it."
	case ap.Person == "" && !ap.Admin:
		return "Deciding needs a person signed in, or the gateway's admin key: a key of no one may be an agent's."
	}
	return ""
}

// OwnCall reports whether the key keyID, or the person person, is the
// one whose call a holds: they decide none of their own calls, whichever
// way they come (a link, the admin API).
func OwnCall(a ledger.MCPApproval, keyID, person string) bool {
	return keyID == a.KeyID || (a.Person != "" && person == a.Person)
}

// name is how the decision records its approver.
func (ap *Approver) name() string {
	if ap.Person != "" {
		return ap.Person
	}
	return "key " + ap.KeyID
}

// Path is the links' prefix.
const Path = "/mcp-approvals/"

// Owns reports whether path is one of the links.
func Owns(path string) bool { return strings.HasPrefix(path, Path) }

// page shows an approval. Its button POSTs with the approver's
// credentials: the session's CSRF token (which /v1/me answers a
// signed-in browser), or a key pasted on the page; without either it
// offers the sign-in.
var page = template.Must(template.New("approval").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta name="robots" content="noindex"><title>MCP approval</title>
<style>body{font:15px system-ui,sans-serif;max-width:42em;margin:3em auto;padding:0 1em}pre{white-space:pre-wrap;word-break:break-all;background:#f4f4f4;padding:.8em}</style></head>
<body><h1>{{.Title}}</h1>
{{if .A.ID}}<p>{{.Who}} asked to call <b>{{.A.Server}}/{{.A.Tool}}</b> with:</p><pre>{{.A.Args}}</pre>
<p>Approval {{.A.ID}} · arguments SHA-256 {{.A.ArgsHash}} · expires {{.Expires}}</p>{{end}}
{{if .Button}}<p>Deciding needs you signed in, and not as the person whose call it is.</p>
<p><button type="button" id="decide">{{.Button}}</button></p>
<p id="signin" hidden><span id="idp" hidden><a href="{{.SignIn}}">Sign in</a>, then press {{.Button}} again; or </span>use a key:
<input id="key" type="password" autocomplete="off"></p><p id="status"></p>
<script nonce="{{.Nonce}}">
document.getElementById("decide").addEventListener("click", async function () {
  const headers = {};
  const key = document.getElementById("key").value;
  if (key) { headers["Authorization"] = "Bearer " + key; } else {
    const me = await fetch("/v1/me", {credentials: "same-origin"});
    if (!me.ok) {
      document.getElementById("signin").hidden = false;
      document.getElementById("status").textContent = "Not signed in.";
      {{if .SignInStatus}}const st = await fetch("{{.SignInStatus}}");
      if (st.ok && (await st.json()).enabled) { document.getElementById("idp").hidden = false; }{{end}}
      return;
    }
    headers["X-CSRF-Token"] = (await me.json()).csrf_token;
  }
  const r = await fetch(location.pathname, {method: "POST", headers: headers, credentials: "same-origin"});
  const doc = new DOMParser().parseFromString(await r.text(), "text/html");
  const h = doc.querySelector("h1");
  document.getElementById("status").textContent = h ? h.textContent : String(r.status);
  if (r.ok) { document.getElementById("decide").disabled = true; }
});
</script>{{end}}
</body></html>
`))

type pageData struct {
	Title, Who, Expires, Button, SignIn, SignInStatus, Nonce string
	A                                                        ledger.MCPApproval
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
		if h.SignInPath != "" && h.SignInStatus != "" {
			data.SignIn, data.SignInStatus = h.SignInPath+"?return="+url.QueryEscape(r.URL.Path), h.SignInStatus
		}
		show(w, http.StatusOK, data)
		return
	}
	var ap *Approver
	if h.Approver != nil {
		ap = h.Approver(r)
	}
	if ap == nil {
		data.Title = "Sign in to decide: the link alone decides nothing."
		show(w, http.StatusUnauthorized, data)
		return
	}
	if why := ap.refusal(a); why != "" {
		data.Title = why
		show(w, http.StatusForbidden, data)
		return
	}
	got, err := h.Decider(store).Decide(r.Context(), a.ID, link.Approve, ap.name(), ViaLink, r.RemoteAddr)
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
	var n [12]byte
	_, _ = rand.Read(n[:])
	d.Nonce = base64.RawStdEncoding.EncodeToString(n[:])
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; connect-src 'self'; script-src 'nonce-"+d.Nonce+"'; form-action 'self'")
	w.WriteHeader(status)
	_ = page.Execute(w, d)
}
