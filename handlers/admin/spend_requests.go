package admin

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/spendlimit"
	"github.com/modelgate/modelgate/webhook"
)

// Increase requests: a person asks for a higher limit of their own (the
// API, `caddy modelgate request-increase`, the dashboard); approvers (admins,
// and the leads of the person's groups) see them here and in the chat,
// whose line carries a single-use link that expires and decides only for
// an approver signed in (spend_link.go); an
// approval writes the person's limit, which every instance's budgets read
// within a second or two.

// linkTTL is how long an approvers' chat link works.
const linkTTL = 24 * time.Hour

// maxReason bounds a request's reason.
const maxReason = 500

// requestWire is r as the API shows it; a pending one carries the
// person's live effective row for its period.
func (a *Handler) requestWire(r ledger.IncreaseRequest) adminapi.IncreaseRequest {
	out := adminapi.IncreaseRequest{ID: r.ID, Type: "spend_limit_increase_request", Actor: userActor(r.Person, r.Email),
		CreatedAt: *rfc3339(r.CreatedAt), Period: r.Period, Status: r.Status, ResolvedAt: rfc3339(r.ResolvedAt),
		RequestedAmount: strconv.FormatInt(r.AmountCents, 10), Reason: r.Reason}
	if r.ResolvedBy != "" {
		by := resolverActor(r.ResolvedBy)
		out.ResolvedBy = &by
	}
	if r.Status == ledger.RequestPending {
		m := member{caller: spendlimit.Caller{Person: r.Person, Groups: ledger.GroupLines(r.Groups)}, email: r.Email}
		if key := a.memberOf(r.Person); key != nil {
			m = *key
		}
		if s := a.summaries(nil, m, []string{r.Period}); len(s) > 0 {
			out.SpendSummary = &s[0]
		}
	}
	return out
}

// memberOf is the person as the effective report sees them, nil when no
// key of theirs is known.
func (a *Handler) memberOf(person string) *member {
	for _, m := range a.members(nil, nil) {
		if m.caller.Person == person {
			return &m
		}
	}
	return nil
}

// resolverActor names who resolved a request: a person, a key, or the
// chat link.
func resolverActor(by string) adminapi.Actor {
	if id, ok := strings.CutPrefix(by, "key:"); ok {
		return adminapi.Actor{Type: "scoped_api_key_actor", ScopedAPIKeyID: id}
	}
	if by == chatLinkActor {
		return adminapi.Actor{Type: "scoped_api_key_actor", ScopedAPIKeyID: chatLinkActor}
	}
	return userActor(strings.TrimPrefix(by, "user:"), "")
}

// chatLinkActor resolved a request through the approvers' chat link.
const chatLinkActor = "chat_link"

// resolverOf is the caller as a request's resolved_by keeps them.
func resolverOf(id *policy.Identity) string {
	if p := id.PersonID(); p != "" {
		return "user:" + p
	}
	return "key:" + id.KeyID
}

// leads reports whether the caller leads one of groups.
func (a *Handler) leads(id *policy.Identity, groups []string) bool {
	p := id.PersonID()
	if p == "" {
		return false
	}
	for _, g := range groups {
		if a.Spend.Leads != nil && slices.Contains(a.Spend.Leads(g), p) {
			return true
		}
	}
	return false
}

// mayResolve reports whether the caller may approve or deny r: an admin
// or a lead of one of the person's groups, and never the person who asked,
// admins included (no one approves their own spend; a sole admin who
// needs more uses the gateway's admin key, which is no person and is
// audited as the key).
func (a *Handler) mayResolve(id *policy.Identity, r ledger.IncreaseRequest) bool {
	if id == nil || (id.PersonID() != "" && id.PersonID() == r.Person) {
		return false
	}
	return id.Role == policy.RoleAdmin || a.leads(id, r.Groups)
}

// maySee reports whether the caller may read r.
func (a *Handler) maySee(id *policy.Identity, r ledger.IncreaseRequest) bool {
	return id.ReadsAll() || a.leads(id, r.Groups) || (id.PersonID() != "" && id.PersonID() == r.Person)
}

// createIncreaseRequest answers POST …/spend_limit_increase_requests
// (extension): the caller, a person, asks for a higher limit of their own.
func (a *Handler) createIncreaseRequest(w http.ResponseWriter, r *http.Request, st spendStore) {
	id := policy.IdentityFrom(r.Context())
	person := id.PersonID()
	if person == "" {
		fail(w, http.StatusForbidden, "an increase request is a person's: use the key `caddy modelgate login` gave you, or the dashboard signed in")
		return
	}
	req, ok := readBody(w, r, decodeCreateIncrease)
	if !ok {
		return
	}
	m := member{caller: spendlimit.Caller{Person: person, Groups: id.Groups, Default: id.PersonBudget}}
	if req.Period == "" {
		// The period they are held to; monthly when nothing holds them.
		req.Period = "monthly"
		if rows := a.summaries(nil, m, nil); len(rows) > 0 {
			req.Period = rows[0].Period
			for _, s := range rows {
				if s.Remaining == "0" {
					req.Period = s.Period
				}
			}
		}
	}
	// One pending request per person and period: asking again would only
	// post the approvers' chat again (hostile pass 10, H10-10). The
	// database enforces it (two asks at once: ledger.ErrIncreasePending);
	// this look first only spares a token and names the pending one.
	if a.refusePending(w, r, st, person, req.Period) {
		return
	}
	token := make([]byte, 32)
	_, _ = rand.Read(token)
	secret := base64.RawURLEncoding.EncodeToString(token)
	sum := sha256.Sum256([]byte(secret))
	email := ""
	if strings.Contains(person, "@") {
		email = person
	}
	now := a.now().UTC()
	created, err := st.CreateIncreaseRequest(r.Context(), ledger.IncreaseRequest{Person: person, Email: email, Groups: groupList(id.Groups),
		Period: req.Period, AmountCents: req.AmountCents, Reason: req.Reason, CreatedAt: now,
		LinkHash: hex.EncodeToString(sum[:]), LinkExpires: now.Add(linkTTL)})
	if errors.Is(err, ledger.ErrIncreasePending) && a.refusePending(w, r, st, person, req.Period) {
		return
	}
	if err != nil {
		storeFailed(w, err)
		return
	}
	a.record(r, "spend_limit_increase_request.create", created.ID, map[string]string{"person": person, "period": created.Period,
		"amount": strconv.FormatInt(created.AmountCents, 10)})
	wire := a.requestWire(created)
	a.tellApprovers(created, wire.SpendSummary, secret)
	writeJSON(w, wire)
}

// refusePending answers 409 naming person's pending request for period,
// when there is one; true once it (or a store failure) is written.
func (a *Handler) refusePending(w http.ResponseWriter, r *http.Request, st spendStore, person, period string) bool {
	pending, found, err := st.PendingIncreaseRequest(r.Context(), person, period)
	if err != nil {
		storeFailed(w, err)
		return true
	}
	if found {
		fail(w, http.StatusConflict, fmt.Sprintf("you already asked for a %s spend limit of %s (request %s, pending since %s); wait for an approver, or ask one to deny it before asking again",
			pending.Period, money.Dollars(pending.AmountCents), pending.ID, pending.CreatedAt.Format(time.RFC3339)))
	}
	return found
}

// groupList splits group lines (ledger.GroupLines).
func groupList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// increaseRequest is a decoded create body.
type increaseRequest struct {
	AmountCents    int64
	Period, Reason string
}

// decodeCreateIncrease reads a create body: amount (cents as a decimal
// string, above zero), period (optional) and reason.
func decodeCreateIncrease(body []byte) (increaseRequest, string) {
	var req adminapi.CreateIncreaseRequest
	if msg := decodeStrict(body, &req); msg != "" {
		return increaseRequest{}, msg
	}
	c, err := money.ParseCents(req.Amount)
	switch {
	case req.Amount == "":
		return increaseRequest{}, "amount: required: the limit you ask for, in cents as a decimal string (\"5000\" is $50.00)"
	case err != nil:
		return increaseRequest{}, "amount: " + err.Error()
	case c == 0:
		return increaseRequest{}, "amount: ask for more than nothing"
	}
	periods := spendlimit.Periods()
	if req.Period != "" && !slices.Contains(periods[:], req.Period) {
		return increaseRequest{}, "period: " + strconv.Quote(req.Period) + " is not daily, weekly or monthly"
	}
	if len(req.Reason) > 4*maxReason {
		return increaseRequest{}, fmt.Sprintf("reason: at most %d characters", maxReason)
	}
	return increaseRequest{AmountCents: c, Period: req.Period, Reason: webhook.OneLine(req.Reason, maxReason)}, ""
}

// tellApprovers posts the one chat line approvers act on. Its link's base
// is the configured public URL, never the request's Host, which the
// person asking chooses; without one the line says where to decide.
func (a *Handler) tellApprovers(req ledger.IncreaseRequest, now *adminapi.SpendSummary, secret string) {
	if a.Spend.Chat == nil {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "💸 %s asks for a %s spend limit of %s", webhook.Clean(req.Person, 200), req.Period, money.Dollars(req.AmountCents))
	if now != nil && now.Amount != nil {
		if c, err := money.ParseCents(*now.Amount); err == nil {
			fmt.Fprintf(&b, " (now %s, spent $%s)", money.Dollars(c), centsAsDollars(now.PeriodToDateSpend))
		}
	}
	if req.Reason != "" {
		fmt.Fprintf(&b, ": “%s”", webhook.Clean(req.Reason, maxReason))
	}
	var leads []string
	for _, g := range req.Groups {
		if a.Spend.Leads != nil {
			leads = append(leads, a.Spend.Leads(g)...)
		}
	}
	who := "admins"
	if len(leads) > 0 {
		who += ", " + webhook.Clean(strings.Join(leads, ", "), 300)
	}
	if base := strings.TrimRight(a.Spend.PublicURL, "/"); base != "" {
		fmt.Fprintf(&b, ". Approve or deny, signed in (%s; link works once, for 24 h): %s%s%s?key=%s", who, base, SpendLinkPath, req.ID, secret)
	} else {
		fmt.Fprintf(&b, ". Approve or deny (%s) in the dashboard or with `caddy modelgate requests approve %s` (no link: set public_url in the modelgate block)", who, req.ID)
	}
	a.Spend.Chat(b.String())
}

// centsAsDollars shows a cents string ("4980.5") in dollars ("49.80").
func centsAsDollars(cents string) string {
	whole, _, _ := strings.Cut(cents, ".")
	c, err := strconv.ParseInt(whole, 10, 64)
	if err != nil {
		return cents
	}
	return strings.TrimPrefix(money.Dollars(c), "$")
}

// listIncreaseRequests answers GET …/spend_limit_increase_requests, most
// recent first: every request for an admin or auditor, their groups'
// for a lead, their own for anyone else.
func (a *Handler) listIncreaseRequests(w http.ResponseWriter, r *http.Request, st spendStore) {
	id := policy.IdentityFrom(r.Context())
	q := r.URL.Query()
	statuses, actors := queryList(q, "status"), queryList(q, "actor_ids")
	for _, s := range statuses {
		if s != ledger.RequestPending && s != ledger.RequestApproved && s != ledger.RequestDenied && s != ledger.RequestSuperseded {
			fail(w, http.StatusBadRequest, "status: "+strconv.Quote(s)+" is not pending, approved, denied or superseded")
			return
		}
	}
	all, err := st.IncreaseRequests(r.Context(), 10000)
	if err != nil {
		storeFailed(w, err)
		return
	}
	var out []adminapi.IncreaseRequest
	for _, req := range all {
		if a.maySee(id, req) && (len(statuses) == 0 || slices.Contains(statuses, req.Status)) && (len(actors) == 0 || slices.Contains(actors, req.Person)) {
			out = append(out, a.requestWire(req))
		}
	}
	writeCursorPage(w, r, out, func(x adminapi.IncreaseRequest) string { return x.ID })
}

// findRequest is the request the path names, if the caller may see it.
func (a *Handler) findRequest(w http.ResponseWriter, r *http.Request, st spendStore) (ledger.IncreaseRequest, bool) {
	req, found, err := st.IncreaseRequest(r.Context(), r.PathValue("id"))
	if err != nil {
		storeFailed(w, err)
		return req, false
	}
	if !found || !a.maySee(policy.IdentityFrom(r.Context()), req) {
		fail(w, http.StatusNotFound, "no spend limit increase request "+strconv.Quote(clip(r.PathValue("id")))+" on this gateway")
		return req, false
	}
	return req, true
}

// getIncreaseRequest answers GET …/spend_limit_increase_requests/{id}.
func (a *Handler) getIncreaseRequest(w http.ResponseWriter, r *http.Request, st spendStore) {
	if req, ok := a.findRequest(w, r, st); ok {
		writeJSON(w, a.requestWire(req))
	}
}

// resolvable is the request the path names when the caller may resolve
// it (doing is what they are doing, for the refusal).
func (a *Handler) resolvable(w http.ResponseWriter, r *http.Request, st spendStore, doing string) (ledger.IncreaseRequest, bool) {
	req, ok := a.findRequest(w, r, st)
	if id := policy.IdentityFrom(r.Context()); ok && !a.mayResolve(id, req) {
		if id.PersonID() == req.Person {
			fail(w, http.StatusForbidden, doing+" your own request is for another approver: an admin, or another lead of one of your groups")
			return req, false
		}
		fail(w, http.StatusForbidden, doing+" needs the gateway's admin key, an admin sign-in, or a lead of one of the person's groups")
		return req, false
	}
	return req, ok
}

// approveIncreaseRequest answers POST …/{id}/approve: the person's own
// limit becomes amount in the period (the request's unless named).
func (a *Handler) approveIncreaseRequest(w http.ResponseWriter, r *http.Request, st spendStore) {
	req, ok := a.resolvable(w, r, st, "approving")
	if !ok {
		return
	}
	in, ok := readBody(w, r, strictly[adminapi.ApproveIncreaseRequest])
	if !ok {
		return
	}
	cents, err := money.ParseCents(in.Amount)
	switch {
	case in.Amount == "":
		fail(w, http.StatusBadRequest, "amount: required: the person's new limit in cents as a decimal string (\"5000\" is $50.00)")
		return
	case err != nil:
		fail(w, http.StatusBadRequest, "amount: "+err.Error())
		return
	}
	period := req.Period
	if in.Period != nil {
		period = *in.Period
		if periods := spendlimit.Periods(); !slices.Contains(periods[:], period) {
			fail(w, http.StatusBadRequest, "period: "+strconv.Quote(period)+" is not daily, weekly or monthly")
			return
		}
	}
	a.resolve(w, r, st, req, ledger.RequestApproved, resolverOf(policy.IdentityFrom(r.Context())), &ledger.SpendLimit{Scope: ledger.ScopeUser, ScopeID: req.Person, Period: period, AmountCents: &cents},
		in.SuppressNotification)
}

// denyIncreaseRequest answers POST …/{id}/deny; denying a denied request
// again answers it as it is.
func (a *Handler) denyIncreaseRequest(w http.ResponseWriter, r *http.Request, st spendStore) {
	req, ok := a.resolvable(w, r, st, "denying")
	if !ok {
		return
	}
	in, ok := readBody(w, r, strictly[adminapi.DenyIncreaseRequest])
	if !ok {
		return
	}
	if req.Status == ledger.RequestDenied {
		writeJSON(w, a.requestWire(req))
		return
	}
	a.resolve(w, r, st, req, ledger.RequestDenied, resolverOf(policy.IdentityFrom(r.Context())), nil, in.SuppressNotification)
}

// resolve moves req to status, writing limit on approval, audits it and
// tells the person; a request resolved meanwhile is a 400.
func (a *Handler) resolve(w http.ResponseWriter, r *http.Request, st spendStore, req ledger.IncreaseRequest, status, by string, limit *ledger.SpendLimit, quiet bool) {
	if req.Status != ledger.RequestPending {
		fail(w, http.StatusBadRequest, "this request was already "+req.Status+"; the person can ask again")
		return
	}
	now := a.now().UTC()
	if limit != nil && !keepAtCap(r.Context(), w, st, req, limit) {
		return
	}
	ok, stored, err := st.ResolveIncreaseRequest(r.Context(), req.ID, status, by, now, limit)
	if err != nil {
		storeFailed(w, err)
		return
	}
	if !ok {
		fail(w, http.StatusBadRequest, "this request was resolved meanwhile; the person can ask again")
		return
	}
	req.Status, req.ResolvedAt, req.ResolvedBy, req.SpendLimitID = status, now, by, stored.ID
	fields := map[string]string{"person": req.Person, "status": status, "resolved_by": by}
	if limit != nil {
		fields["period"], fields["amount"] = stored.Period, strconv.FormatInt(*stored.AmountCents, 10)
	}
	a.recorder().Record(r.Context(), audit.Event{Time: now, Actor: by, Action: "spend_limit_increase_request." + status, Target: req.ID,
		Source: audit.SourceOf(r), Fields: fields})
	if !quiet && a.Spend.Chat != nil {
		if limit != nil {
			a.Spend.Chat(fmt.Sprintf("✅ %s: your %s spend limit is now %s (request approved)", webhook.Clean(req.Person, 200), stored.Period, money.Dollars(*stored.AmountCents)))
		} else {
			a.Spend.Chat(fmt.Sprintf("❌ %s: your request for a %s spend limit of %s was denied", webhook.Clean(req.Person, 200), req.Period, money.Dollars(req.AmountCents)))
		}
	}
	out := a.requestWire(req)
	if limit != nil {
		l := limitWire(stored)
		out.SpendLimit = &l
		m := member{caller: spendlimit.Caller{Person: req.Person, Groups: ledger.GroupLines(req.Groups)}}
		if key := a.memberOf(req.Person); key != nil {
			m = *key
		}
		// The budgets read the new limit within a second; the summary
		// shows it now.
		if all, err := st.SpendLimits(r.Context()); err == nil {
			if s := a.summaries(spendlimit.NewSet(all), m, []string{stored.Period}); len(s) > 0 {
				out.SpendSummary = &s[0]
			}
		}
	}
	writeJSON(w, out)
}

// linkTokenOK reports whether secret is req's chat link token, unexpired.
func linkTokenOK(req ledger.IncreaseRequest, secret string, now time.Time) bool {
	if req.LinkHash == "" || secret == "" || !now.Before(req.LinkExpires) {
		return false
	}
	sum := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare([]byte(hex.EncodeToString(sum[:])), []byte(req.LinkHash)) == 1
}
