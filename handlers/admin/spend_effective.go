package admin

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/spendlimit"
)

// member is a person the effective report lists: their limits follow
// from their groups and their group rule's budget, which their newest key
// carries.
type member struct {
	caller spendlimit.Caller
	email  string
}

// members are the people with a key minted for them, a limit of their
// own or an increase request, by id.
func (a *Handler) members(limits []ledger.SpendLimit, requests []ledger.IncreaseRequest) []member {
	byID := map[string]member{}
	newest := map[string]int64{}
	if a.Controls != nil {
		keys, _ := a.Controls.Runtime()
		for _, k := range keys {
			c := k.CreatedBy
			if c == nil || c.Type != "oidc" || k.Status != "active" {
				continue
			}
			if at := k.CreatedAt.UnixMicro(); at >= newest[c.ID] {
				newest[c.ID] = at
				byID[c.ID] = member{caller: spendlimit.Caller{Person: c.ID, Groups: c.Groups, Default: c.Budget}, email: c.Email}
			}
		}
	}
	for _, r := range requests {
		if _, ok := byID[r.Person]; !ok {
			byID[r.Person] = member{caller: spendlimit.Caller{Person: r.Person, Groups: ledger.GroupLines(r.Groups)}, email: r.Email}
		}
	}
	for _, l := range limits {
		if _, ok := byID[l.ScopeID]; l.Scope == ledger.ScopeUser && !ok {
			byID[l.ScopeID] = member{caller: spendlimit.Caller{Person: l.ScopeID}}
		}
	}
	out := make([]member, 0, len(byID))
	for _, m := range byID {
		out = append(out, m)
	}
	slices.SortFunc(out, func(x, y member) int { return strings.Compare(x.caller.Person, y.caller.Person) })
	return out
}

// userActor is a person as the API names them.
func userActor(person, email string) adminapi.Actor {
	f := false
	a := adminapi.Actor{Type: "user_actor", UserID: person, Deleted: &f}
	if email == "" && strings.Contains(person, "@") {
		email = person
	}
	if email != "" {
		a.EmailAddress = &email
	}
	return a
}

// summaries are a member's effective report rows, of the periods asked,
// under the limits of set (nil: those admission holds now).
func (a *Handler) summaries(set *spendlimit.Set, m member, periods []string) []adminapi.SpendSummary {
	var out []adminapi.SpendSummary
	for _, e := range a.Spend.Budgets.Effective(set, m.caller) {
		if len(periods) > 0 && !slices.Contains(periods, e.Period) {
			continue
		}
		amount := strconv.FormatInt(e.Cents, 10)
		s := adminapi.SpendSummary{Actor: userActor(m.caller.Person, m.email), Amount: &amount, Currency: "USD", Period: e.Period,
			PeriodToDateSpend: ledger.ShortCents(e.SpentPico), Scope: adminapi.SpendScope{Type: "user", UserID: m.caller.Person},
			Source: scopeWire(e.SourceScope, e.SourceID), SpendLimitID: e.LimitID, Remaining: ledger.ShortCents(e.RemainingPico)}
		if !e.Resets.IsZero() {
			s.ResetsAt = *rfc3339(e.Resets)
		}
		s.SessionLimit = sessionLimitOf(set, m.caller)
		out = append(out, s)
	}
	return out
}

// effectiveLimits answers GET /v1/organizations/spend_limits/effective:
// per member and period, the limit that binds them and what they spent,
// paged by member (a member's periods never split across pages).
func (a *Handler) effectiveLimits(w http.ResponseWriter, r *http.Request, st spendStore) {
	if !policy.IdentityFrom(r.Context()).ReadsAll() {
		fail(w, http.StatusForbidden, "the effective report needs the gateway's admin key or an admin or auditor sign-in; see your own limits on GET /v1/me")
		return
	}
	q := r.URL.Query()
	periods := queryList(q, "period")
	all := spendlimit.Periods()
	for _, p := range periods {
		if !slices.Contains(all[:], p) {
			fail(w, http.StatusBadRequest, "period: "+strconv.Quote(p)+" is not daily, weekly or monthly")
			return
		}
	}
	users := queryList(q, "user_ids")
	if len(users) > 100 {
		fail(w, http.StatusBadRequest, "user_ids: at most 100 entries")
		return
	}
	limits, err := st.SpendLimits(r.Context())
	if err != nil {
		storeFailed(w, err)
		return
	}
	requests, err := st.IncreaseRequests(r.Context(), 10000)
	if err != nil {
		storeFailed(w, err)
		return
	}
	members := a.members(limits, requests)
	set := spendlimit.NewSet(limits)
	if len(users) > 0 {
		members = slices.DeleteFunc(members, func(m member) bool { return !slices.Contains(users, m.caller.Person) })
	}
	// Members without a limit in the periods asked have no rows, and
	// take no place on a page.
	rows := make([][]adminapi.SpendSummary, 0, len(members))
	for _, m := range members {
		if s := a.summaries(set, m, periods); len(s) > 0 {
			rows = append(rows, s)
		}
	}
	from, n, msg := cursorBounds(r, len(rows), func(i int) string { return rows[i][0].Actor.UserID })
	if msg != "" {
		fail(w, http.StatusBadRequest, msg)
		return
	}
	page := adminapi.CursorPage[adminapi.SpendSummary]{Data: []adminapi.SpendSummary{}}
	for _, s := range rows[from:min(from+n, len(rows))] {
		page.Data = append(page.Data, s...)
	}
	if from+n < len(rows) {
		next := cursorOf(rows[from+n-1][0].Actor.UserID)
		page.NextPage = &next
	}
	writeJSON(w, page)
}
