package admincli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// WorkFilter picks the work `caddy modelgate cost` reports: a pull
// request (of a repository, when given), a ticket, or a repository.
type WorkFilter struct {
	Repo, Ticket string
	PR           int64
}

// CostRow is the spend of one repository, branch and pull request (or
// ticket) over the days asked.
type CostRow struct {
	Repository  string  `json:"repository"`
	Branch      string  `json:"branch"`
	PullRequest int64   `json:"pull_request,omitempty"`
	Title       string  `json:"title,omitempty"`
	State       string  `json:"state,omitempty"`
	Ticket      string  `json:"ticket"`
	Sessions    int64   `json:"sessions"` // summed per day: a session over two days counts twice
	Requests    int64   `json:"requests"`
	Cents       float64 `json:"cents"`
}

// workPage is the part of the work report the CLI reads.
type workPage struct {
	Data []struct {
		Results []struct {
			Unattributed bool    `json:"unattributed"`
			Repository   *string `json:"repository"`
			Branch       *string `json:"branch"`
			Ticket       *string `json:"ticket"`
			PullRequest  *struct {
				Number int64  `json:"number"`
				Title  string `json:"title"`
				State  string `json:"state"`
			} `json:"pull_request"`
			Amount   string `json:"amount"`
			Sessions int64  `json:"sessions"`
			Requests int64  `json:"requests"`
		} `json:"results"`
	} `json:"data"`
	NextPage *string `json:"next_page"`
}

// WorkCost reads the last days' work report for f, one row per
// repository, branch, pull request and ticket, dearest first.
func (c *Client) WorkCost(ctx context.Context, days int, now time.Time, f WorkFilter) ([]CostRow, error) {
	q := url.Values{}
	q.Set("starting_at", now.UTC().Truncate(24*time.Hour).AddDate(0, 0, 1-days).Format(time.RFC3339))
	for _, g := range []string{"repository", "branch", "pull_request", "ticket"} {
		q.Add("group_by[]", g)
	}
	if f.Repo != "" {
		q.Set("repositories[]", f.Repo)
	}
	if f.Ticket != "" {
		q.Set("tickets[]", f.Ticket)
	}
	if f.PR > 0 {
		q.Set("pull_requests[]", strconv.FormatInt(f.PR, 10))
	}
	rows := map[[4]string]*CostRow{}
	err := c.report(ctx, "/v1/organizations/usage_report/work", q, func(b []byte) (*string, error) {
		var p workPage
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("the work report: %w", err)
		}
		for _, bucket := range p.Data {
			for _, r := range bucket.Results {
				if r.Unattributed {
					continue
				}
				row := CostRow{Repository: deref(r.Repository), Branch: deref(r.Branch), Ticket: deref(r.Ticket)}
				if pr := r.PullRequest; pr != nil {
					row.PullRequest, row.Title, row.State = pr.Number, pr.Title, pr.State
				}
				k := [4]string{row.Repository, row.Branch, strconv.FormatInt(row.PullRequest, 10), row.Ticket}
				if rows[k] == nil {
					rows[k] = &row
				}
				cents, _ := strconv.ParseFloat(r.Amount, 64)
				rows[k].Cents += cents
				rows[k].Sessions += r.Sessions
				rows[k].Requests += r.Requests
			}
		}
		return p.NextPage, nil
	})
	if err != nil {
		return nil, err
	}
	out := make([]CostRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b CostRow) int {
		return cmp.Or(cmp.Compare(b.Cents, a.Cents), cmp.Compare(a.Repository, b.Repository), cmp.Compare(a.Branch, b.Branch))
	})
	return out, nil
}

// WriteCost prints cost rows as a table with a total.
func WriteCost(w io.Writer, rows []CostRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPOSITORY\tBRANCH\tPULL REQUEST\tSTATE\tTICKET\tSESSIONS\tREQUESTS\tCOST")
	var cents float64
	for _, r := range rows {
		pr := "-"
		if r.PullRequest > 0 {
			pr = "#" + strconv.FormatInt(r.PullRequest, 10) + " " + r.Title
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t$%.4f\n", r.Repository, r.Branch, pr, cmp.Or(r.State, "-"), r.Ticket,
			r.Sessions, r.Requests, r.Cents/100)
		cents += r.Cents
	}
	fmt.Fprintf(tw, "total\t\t\t\t\t\t\t$%.4f\n", cents/100)
	return tw.Flush()
}
