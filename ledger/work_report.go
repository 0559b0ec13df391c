package ledger

import (
	"cmp"
	"context"
	"errors"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"time"
)

// WorkReportPage is the JSON body of GET /v1/organizations/usage_report/work:
// cost by the work it bought, paged and bucketed like the usage report.
type WorkReportPage struct {
	Data     []WorkBucket `json:"data"`
	HasMore  bool         `json:"has_more"`
	NextPage *string      `json:"next_page"`
}

// WorkBucket is one time bucket; Results is [] when nothing was spent.
type WorkBucket struct {
	StartingAt string       `json:"starting_at"`
	EndingAt   string       `json:"ending_at"`
	Results    []WorkResult `json:"results"`
}

// WorkResult is one group's spend. Dimension fields are null unless the
// query grouped by them (or when the group has none: a record of no known
// repository has no branch). Unattributed rows hold the records of
// sessions no hook or header placed in a repository, so that a bucket's
// amounts always add up to the cost report's.
type WorkResult struct {
	Unattributed bool          `json:"unattributed"`
	Repository   *string       `json:"repository"`
	Branch       *string       `json:"branch"`
	PullRequest  *WorkPullInfo `json:"pull_request"`
	Ticket       *string       `json:"ticket"`
	Person       *string       `json:"person"`
	APIKeyID     *string       `json:"api_key_id"`
	WorkspaceID  *string       `json:"workspace_id"`
	// Amount is decimal cents of Currency, as in the cost report.
	Amount                   string  `json:"amount"`
	Currency                 string  `json:"currency"`
	UncachedInputTokens      int64   `json:"uncached_input_tokens"`
	CacheCreationInputTokens int64   `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64   `json:"cache_read_input_tokens"`
	OutputTokens             int64   `json:"output_tokens"`
	Sessions                 int64   `json:"sessions"`
	Requests                 int64   `json:"requests"`
	CacheReadShare           float64 `json:"cache_read_share"`

	pico int64
}

// WorkPullInfo names a pull request in a work report row.
type WorkPullInfo struct {
	Number   int64   `json:"number"`
	Title    string  `json:"title"`
	State    string  `json:"state"`
	Author   string  `json:"author"`
	URL      string  `json:"url"`
	OpenedAt *string `json:"opened_at"`
	MergedAt *string `json:"merged_at"`
	ClosedAt *string `json:"closed_at"`
}

// WorkQuery is a validated work report request.
type WorkQuery struct {
	ReportQuery
	// Filters; empty lists do not filter. A filter on the work drops the
	// unattributed rows.
	Repositories, Branches, Tickets []string
	PullRequests                    []int64
}

func workGroups() []string {
	return []string{"repository", "branch", "pull_request", "ticket", "person", "api_key_id", "workspace_id"}
}

// DefaultTicketPattern finds ticket keys such as ABC-123.
const DefaultTicketPattern = `[A-Z][A-Z0-9]+-[0-9]+`

// ParseWorkQuery validates the query of GET /v1/organizations/usage_report/work.
func ParseWorkQuery(v url.Values, now time.Time) (WorkQuery, error) {
	rq, err := parseBucketed(v, now, workGroups(), "repositories", "branches", "tickets", "pull_requests")
	q := WorkQuery{ReportQuery: rq}
	if err != nil {
		return q, err
	}
	q.Repositories, q.Branches, q.Tickets = list(v, "repositories"), list(v, "branches"), list(v, "tickets")
	for _, s := range list(v, "pull_requests") {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 {
			return q, paramErr("pull_requests[]", "%q is not a pull request number", s)
		}
		q.PullRequests = append(q.PullRequests, n)
	}
	return q, nil
}

// WorkReportOptions are what the report needs beyond the store.
type WorkReportOptions struct {
	// Tickets finds ticket keys in branch names and titles; nil: the
	// default pattern.
	Tickets *regexp.Regexp
	// PersonOf names the person a key belongs to; nil or "": none.
	PersonOf func(keyID string) string
}

type workKey struct {
	unattributed                          bool
	repo, branch, ticket, person, key, ws optString
	pullRepo                              string
	pull                                  int64
}

// WorkReport answers one page of the work report.
func WorkReport(ctx context.Context, s Store, q WorkQuery, o WorkReportOptions) (*WorkReportPage, error) {
	ws, ok := s.(WorkStore)
	if !ok {
		return nil, errors.New("this ledger keeps no work contexts")
	}
	if o.Tickets == nil {
		o.Tickets = regexp.MustCompile(DefaultTicketPattern)
	}
	p := q.page()
	out := &WorkReportPage{Data: make([]WorkBucket, p.n), HasMore: p.next != nil, NextPage: p.next}
	if p.n == 0 {
		return out, nil
	}
	rows, err := ws.WorkRows(ctx, Filter{From: p.start, To: p.end, APIKeyIDs: q.APIKeyIDs, WorkspaceIDs: q.WorkspaceIDs,
		ExcludeServiceTiers: priorityTiers()}, q.Width)
	if err != nil {
		return nil, err
	}
	var repos []string
	for _, r := range rows {
		if r.Repo != "" && !slices.Contains(repos, r.Repo) {
			repos = append(repos, r.Repo)
		}
	}
	var pulls []Pull
	if len(repos) > 0 {
		if pulls, err = ws.Pulls(ctx, repos); err != nil {
			return nil, err
		}
	}
	g := func(dim string) bool { return q.grouped(dim) }
	groups := make([]map[workKey]*WorkResult, p.n)
	sessions := make([]map[workKey]map[[2]string]bool, p.n)
	for i := range rows {
		r := &rows[i]
		b := bucketIndex(r.Bucket, p.start, q.Width, p.n)
		if b < 0 {
			continue
		}
		pr := PullOf(pulls, r.Repo, r.Branch, r.First)
		ticket := ""
		if r.Repo != "" {
			ticket = TicketOf(o.Tickets, r.Branch, pr)
		}
		if !q.matches(r, pr, ticket) {
			continue
		}
		person := ""
		if o.PersonOf != nil {
			person = o.PersonOf(r.KeyID)
		}
		k := workKey{unattributed: r.Repo == "", repo: opt(g("repository"), r.Repo), branch: opt(g("branch"), r.Branch),
			ticket: opt(g("ticket"), ticket), person: opt(g("person"), person), key: opt(g("api_key_id"), r.KeyID),
			ws: opt(g("workspace_id"), r.Workspace)}
		if g("pull_request") && pr != nil {
			k.pullRepo, k.pull = pr.Repo, pr.Number
		}
		if groups[b] == nil {
			groups[b], sessions[b] = map[workKey]*WorkResult{}, map[workKey]map[[2]string]bool{}
		}
		res := groups[b][k]
		if res == nil {
			res = &WorkResult{Unattributed: k.unattributed, Repository: k.repo.ptr(), Branch: k.branch.ptr(), Ticket: k.ticket.ptr(),
				Person: k.person.ptr(), APIKeyID: k.key.ptr(), WorkspaceID: k.ws.ptr(), Currency: "USD"}
			if k.pull != 0 {
				res.PullRequest = pullInfo(pr)
				if !g("repository") {
					repo := pr.Repo
					res.Repository = &repo // a number means nothing without its repository
				}
			}
			groups[b][k], sessions[b][k] = res, map[[2]string]bool{}
		}
		addSat(&res.pico, r.CostPicoUSD)
		addSat(&res.UncachedInputTokens, r.InputTokens)
		addSat(&res.CacheCreationInputTokens, r.CacheWrite)
		addSat(&res.CacheReadInputTokens, r.CacheRead)
		addSat(&res.OutputTokens, r.OutputTokens)
		addSat(&res.Requests, r.Requests)
		if r.SessionID != "" {
			sessions[b][k][[2]string{r.KeyID, r.SessionID}] = true
		}
	}
	for i := range out.Data {
		bs := p.start.Add(time.Duration(i) * q.Width)
		out.Data[i] = WorkBucket{StartingAt: formatTime(bs), EndingAt: formatTime(bs.Add(q.Width)), Results: make([]WorkResult, 0, len(groups[i]))}
		for k, res := range groups[i] {
			res.Amount = formatCents(res.pico)
			res.Sessions = int64(len(sessions[i][k]))
			res.CacheReadShare = CacheReadShare(res.UncachedInputTokens, res.CacheCreationInputTokens, res.CacheReadInputTokens)
			out.Data[i].Results = append(out.Data[i].Results, *res)
		}
		slices.SortFunc(out.Data[i].Results, compareWork)
	}
	return out, nil
}

// compareWork orders a bucket's rows: attributed ones by cost, dearest
// first, then the unattributed; ties by their names, so pages are stable.
func compareWork(a, b WorkResult) int {
	if a.Unattributed != b.Unattributed {
		if a.Unattributed {
			return 1
		}
		return -1
	}
	na, nb := int64(0), int64(0)
	if a.PullRequest != nil {
		na = a.PullRequest.Number
	}
	if b.PullRequest != nil {
		nb = b.PullRequest.Number
	}
	return cmp.Or(cmp.Compare(b.pico, a.pico), cmpPtr(a.Repository, b.Repository), cmpPtr(a.Branch, b.Branch), cmp.Compare(na, nb),
		cmpPtr(a.Ticket, b.Ticket), cmpPtr(a.Person, b.Person), cmpPtr(a.APIKeyID, b.APIKeyID), cmpPtr(a.WorkspaceID, b.WorkspaceID))
}

func cmpPtr(a, b *string) int {
	return optString{valid: a != nil, s: deref(a)}.compare(optString{valid: b != nil, s: deref(b)})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func (q *WorkQuery) matches(r *WorkRow, pr *Pull, ticket string) bool {
	if len(q.Repositories) > 0 && !slices.Contains(q.Repositories, r.Repo) {
		return false
	}
	if len(q.Branches) > 0 && (r.Repo == "" || !slices.Contains(q.Branches, r.Branch)) {
		return false
	}
	if len(q.Tickets) > 0 && (ticket == "" || !slices.Contains(q.Tickets, ticket)) {
		return false
	}
	if len(q.PullRequests) > 0 && (pr == nil || !slices.Contains(q.PullRequests, pr.Number)) {
		return false
	}
	return true
}

// PullOf is the pull request a branch's work at time t went into: of the
// requests from that branch, the first still open at t or ended after it
// (work comes before its request is opened, and a branch reused after a
// merge starts the next request's work). nil: none.
func PullOf(pulls []Pull, repo, branch string, t time.Time) *Pull {
	if repo == "" {
		return nil
	}
	var best *Pull
	for i := range pulls {
		p := &pulls[i]
		if p.Repo != repo || p.Branch != branch {
			continue
		}
		end := p.MergedAt
		if end.IsZero() {
			end = p.ClosedAt
		}
		if !end.IsZero() && end.Before(t) {
			continue
		}
		if best == nil || p.OpenedAt.Before(best.OpenedAt) {
			best = p
		}
	}
	return best
}

// TicketOf is the first ticket key in the branch's name, else in its pull
// request's title; "" when neither names one.
func TicketOf(re *regexp.Regexp, branch string, pr *Pull) string {
	if t := re.FindString(branch); t != "" {
		return t
	}
	if pr != nil {
		return re.FindString(pr.Title)
	}
	return ""
}

func pullInfo(p *Pull) *WorkPullInfo {
	at := func(t time.Time) *string {
		if t.IsZero() {
			return nil
		}
		s := formatTime(t)
		return &s
	}
	return &WorkPullInfo{Number: p.Number, Title: p.Title, State: p.State, Author: p.Author, URL: p.URL,
		OpenedAt: at(p.OpenedAt), MergedAt: at(p.MergedAt), ClosedAt: at(p.ClosedAt)}
}

// PullCost sums the spend of the work that went into the pull request p
// between from and to: its cost, requests and distinct sessions.
func PullCost(ctx context.Context, ws WorkStore, p Pull, from, to time.Time) (pico, requests int64, sessions int, err error) {
	rows, err := ws.WorkRows(ctx, Filter{From: from, To: to, ExcludeServiceTiers: priorityTiers()}, 24*time.Hour)
	if err != nil {
		return 0, 0, 0, err
	}
	pulls, err := ws.Pulls(ctx, []string{p.Repo})
	if err != nil {
		return 0, 0, 0, err
	}
	seen := map[[2]string]bool{}
	for i := range rows {
		r := &rows[i]
		if r.Repo != p.Repo || r.Branch != p.Branch {
			continue
		}
		if pr := PullOf(pulls, r.Repo, r.Branch, r.First); pr == nil || pr.Number != p.Number {
			continue
		}
		addSat(&pico, r.CostPicoUSD)
		addSat(&requests, r.Requests)
		if r.SessionID != "" {
			seen[[2]string{r.KeyID, r.SessionID}] = true
		}
	}
	return pico, requests, len(seen), nil
}
