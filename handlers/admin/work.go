package admin

import (
	"errors"
	"net/http"
	"regexp"

	"github.com/modelgate/modelgate/ledger"
)

// WorkReportPath is the gateway's report of cost by the work it bought:
// repository, branch, pull request, ticket, person and workspace.
const WorkReportPath = "/v1/organizations/usage_report/work"

// serveWork answers the work report from the ledger (in proxy mode too:
// no provider has one).
func (a *Handler) serveWork(w http.ResponseWriter, r *http.Request) {
	if a.Store == nil {
		fail(w, http.StatusInternalServerError, "usage ledger not configured")
		return
	}
	v, err := ledger.ParseRawQuery(r.URL.RawQuery)
	var q ledger.WorkQuery
	if err == nil {
		q, err = ledger.ParseWorkQuery(v, a.now())
	}
	var page *ledger.WorkReportPage
	if err == nil {
		q.APIKeyIDs = ownRows(r, q.APIKeyIDs)
		page, err = ledger.WorkReport(r.Context(), a.Store, q, ledger.WorkReportOptions{Tickets: a.Tickets, PersonOf: a.personOf()})
	}
	answerReport(w, r, page, err)
}

// personOf names the person each key belongs to: the signed-in person a
// key was minted for, or a static key's person.
func (a *Handler) personOf() func(string) string {
	if a.Controls == nil {
		return nil
	}
	people := map[string]string{}
	static, _, _ := a.Controls.Static(a.Site)
	for _, id := range static {
		if id.Person != "" {
			people[id.KeyID] = id.Person
		}
	}
	keys, _ := a.Controls.Runtime()
	for _, k := range keys {
		if c := k.CreatedBy; c != nil {
			people[k.ID] = cmpOr(c.Email, c.Subject, c.ID)
		}
	}
	return func(key string) string { return people[key] }
}

func cmpOr(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}

// CompileTicketPattern checks an admin's ticket pattern: a regular
// expression that matches no empty string.
func CompileTicketPattern(s string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(s)
	if err != nil {
		return nil, err
	}
	if re.MatchString("") {
		return nil, errors.New("the pattern matches an empty string, so every branch would name a ticket")
	}
	return re, nil
}
