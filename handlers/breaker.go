package handlers

// The agent-run breaker's step in a request (package breaker decides):
// which rules apply, the request's history in the breaker's terms, and
// the decision rendered: a held session's refusal in the caller's error
// family, a nudge's body sent instead of the client's.

import (
	"context"
	"html"
	"net/http"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// HeaderBreaker names, on an answer, what the breaker did to its request
// ("nudge": the request carried the breaker's note).
const HeaderBreaker = "X-Modelgate-Breaker"

// turnIn is what admitTurn needs of a request, in plain values, so the
// door and the transport-free core call it alike.
type turnIn struct {
	cf   providers.Format
	id   *policy.Identity
	rec  *ledger.Record // its session and agent resolved
	body []byte
	info providers.RequestInfo
	// repo is the work context's repository, when known.
	repo string
	// header is the answer's, for HeaderBreaker.
	header http.Header
}

// admitTurn asks the breaker about a request of an agent session (or, with
// no session id, of its conversation under the key). A
// decision with a Refusal is the answer (the caller renders it in the
// client's family); otherwise body and info are the request to send, a
// nudge's when the breaker added its note.
// reparse reads a nudged body as the client's format does.
func (g *Gateway) admitTurn(ctx context.Context, in turnIn, reparse func(body []byte) (providers.RequestInfo, error)) (breaker.Decision, []byte, providers.RequestInfo) {
	if g.opts.Breaker == nil || in.id == nil {
		return breaker.Decision{}, in.body, in.info
	}
	rules := in.id.Limits.Breaker
	if rules == nil {
		rules = g.opts.Controls.WorkspaceLimits(in.id.Workspace).Breaker
	}
	if rules == nil {
		return breaker.Decision{}, in.body, in.info
	}
	// A Responses turn continuing a stored history is judged on the whole
	// of it, as the upstream is sent it: its own body holds only the new
	// input, and a loop chained by previous_response_id would go unseen.
	judged, expanded := in.body, false
	if t, ok := in.info.Turn.(*providers.ResponsesTurn); ok {
		if inline, ok, err := t.InlineHistory(in.body); err == nil && ok {
			judged, expanded = inline, true
		}
	}
	d := g.opts.Breaker.Admit(ctx, &breaker.Turn{Format: breakerFormat(in.cf), Body: judged, Session: in.rec.SessionID, KeyID: in.id.KeyID,
		Workspace: in.id.Workspace, Person: in.id.Person, Owner: in.id.Owner, Agent: in.rec.Agent, Repo: in.repo, Rules: rules})
	if expanded {
		// A nudge's body would carry the history inline and be stored as
		// this turn's input; such a turn goes as the client sent it.
		d.Body = nil
	}
	if d.Refusal == nil && d.Body != nil {
		if nudged, err := reparse(d.Body); err == nil {
			in.header.Set(HeaderBreaker, "nudge")
			return d, d.Body, nudged
		}
	}
	return d, in.body, in.info
}

func breakerFormat(cf providers.Format) breaker.Format {
	switch cf {
	case providers.FormatAnthropic:
		return breaker.FormatMessages
	case providers.FormatOpenAI:
		return breaker.FormatChat
	case providers.FormatResponses:
		return breaker.FormatResponses
	case providers.FormatGemini:
		return breaker.FormatGemini
	case providers.FormatConverse:
		return breaker.FormatConverse
	}
	return breaker.FormatOther
}

// serveResume answers a loop breaker's resume link: GET shows the paused
// session and a button (a chat's link preview must not resume it), POST
// resumes it with the link's token.
func (g *Gateway) serveResume(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'")
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, 4<<10)
	}
	if err := r.ParseForm(); err != nil {
		resumePage(w, http.StatusBadRequest, "This link is not one the gateway made.", "")
		return
	}
	key, session, token := r.Form.Get("k"), r.Form.Get("s"), r.Form.Get("t")
	if key == "" || session == "" || token == "" {
		resumePage(w, http.StatusBadRequest, "This link is not one the gateway made: it lacks the session or its token.", "")
		return
	}
	if r.Method == http.MethodGet {
		st, found, err := g.opts.Breaker.LinkStatus(r.Context(), key, session, token)
		switch {
		case err != nil:
			resumePage(w, http.StatusServiceUnavailable, "The gateway could not read the session's state; try again.", "")
		case !found || st.State != "paused":
			// One answer for a wrong token and a session not paused: a
			// guessed link learns nothing of the session.
			resumePage(w, http.StatusOK, "This link resumes nothing: the session is not paused under it (resumed already, paused again since, or not a link the gateway made).", "")
		default:
			resumePage(w, http.StatusOK, "Session "+session+" (key "+key+") was paused by the loop breaker ("+st.Pattern+").", r.Form.Encode())
		}
		return
	}
	was, ok, err := g.opts.Breaker.Resume(r.Context(), key, session, token, "resume link")
	switch {
	case err != nil:
		resumePage(w, http.StatusServiceUnavailable, "The gateway could not resume the session; try again.", "")
	case ok:
		resumePage(w, http.StatusOK, "Session "+session+" is resumed: the agent's next request goes through.", "")
	case was == breaker.ActionStop:
		resumePage(w, http.StatusForbidden, "Session "+session+" was stopped: only an admin can clear it.", "")
	case was == "":
		resumePage(w, http.StatusOK, "Session "+session+" is not paused: nothing to resume.", "")
	default:
		resumePage(w, http.StatusForbidden, "This link is no longer valid: the session was paused again since. Use the link of the latest message.", "")
	}
}

func resumePage(w http.ResponseWriter, status int, msg, form string) {
	w.WriteHeader(status)
	page := `<!doctype html><meta charset="utf-8"><title>Modelgate loop breaker</title>` +
		`<body style="font:16px system-ui;max-width:40em;margin:3em auto"><h1>Loop breaker</h1><p>` + html.EscapeString(msg) + `</p>`
	if form != "" {
		page += `<form method="post" action="` + breaker.ResumePath + `?` + html.EscapeString(form) + `"><button type="submit">Resume the session</button></form>`
	}
	_, _ = w.Write([]byte(page))
}
