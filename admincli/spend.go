package admincli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"text/tabwriter"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/money"
)

// RequestIncrease asks for a higher spend limit of the caller's own (the
// client's key is a person's); dollars as a person writes them.
func (c *Client) RequestIncrease(ctx context.Context, dollars, period, reason string) (adminapi.IncreaseRequest, error) {
	var r adminapi.IncreaseRequest
	cents, err := money.ParseDollars(dollars)
	if err != nil {
		return r, fmt.Errorf("--amount: %v", err)
	}
	b, err := c.do(ctx, http.MethodPost, adminapi.IncreaseRequestsPath,
		adminapi.CreateIncreaseRequest{Amount: fmt.Sprint(cents), Period: period, Reason: reason})
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	return r, err
}

// IncreaseRequests lists the requests the caller may see (status "" for
// all), every page.
func (c *Client) IncreaseRequests(ctx context.Context, status string) ([]adminapi.IncreaseRequest, error) {
	var all []adminapi.IncreaseRequest
	q := url.Values{"limit": {"1000"}}
	if status != "" {
		q.Set("status[]", status)
	}
	for {
		b, err := c.do(ctx, http.MethodGet, adminapi.IncreaseRequestsPath+"?"+q.Encode(), nil)
		if err != nil {
			return nil, err
		}
		var page adminapi.CursorPage[adminapi.IncreaseRequest]
		if err := json.Unmarshal(b, &page); err != nil {
			return nil, fmt.Errorf("the gateway's increase requests are unreadable: %v", err)
		}
		all = append(all, page.Data...)
		if page.NextPage == nil {
			return all, nil
		}
		q.Set("page", *page.NextPage)
	}
}

// ResolveIncrease approves (a new limit of dollars; "" grants what was
// asked) or denies request id.
func (c *Client) ResolveIncrease(ctx context.Context, id string, approve bool, dollars string) (adminapi.IncreaseRequest, error) {
	var r adminapi.IncreaseRequest
	path := adminapi.IncreaseRequestsPath + "/" + url.PathEscape(id)
	var body any = adminapi.DenyIncreaseRequest{}
	if approve {
		amount := ""
		if dollars == "" {
			b, err := c.do(ctx, http.MethodGet, path, nil)
			if err == nil {
				err = json.Unmarshal(b, &r)
			}
			if err != nil {
				return r, err
			}
			amount = r.RequestedAmount
		} else {
			cents, err := money.ParseDollars(dollars)
			if err != nil {
				return r, fmt.Errorf("--amount: %v", err)
			}
			amount = fmt.Sprint(cents)
		}
		body, path = adminapi.ApproveIncreaseRequest{Amount: amount}, path+"/approve"
	} else {
		path += "/deny"
	}
	b, err := c.do(ctx, http.MethodPost, path, body)
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	return r, err
}

// WriteRequests prints requests as a table.
func WriteRequests(w io.Writer, rs []adminapi.IncreaseRequest) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPERSON\tPERIOD\tASKED\tNOW\tSPENT\tSTATUS\tREASON")
	for _, r := range rs {
		now, spent := "-", "-"
		if s := r.SpendSummary; s != nil {
			if s.Amount != nil {
				now = centsDollars(*s.Amount)
			}
			spent = centsDollars(s.PeriodToDateSpend)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Actor.UserID, r.Period, centsDollars(r.RequestedAmount), now, spent, r.Status, r.Reason)
	}
	return tw.Flush()
}

// centsDollars shows a cents string in dollars, whole cents.
func centsDollars(cents string) string {
	var c int64
	if _, err := fmt.Sscanf(cents, "%d", &c); err != nil {
		return cents
	}
	return money.Dollars(c)
}
