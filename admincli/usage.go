package admincli

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"
)

// UsageRow is one day's use of one model by one key: requests and tokens
// from the usage report, spend from the cost report. A free local model has tokens and
// no spend, and is listed all the same.
type UsageRow struct {
	Day              string  `json:"day"`
	Key              string  `json:"api_key_id"`
	Model            string  `json:"model"`
	Requests         int64   `json:"requests"`     // those that used tokens
	InputTokens      int64   `json:"input_tokens"` // uncached input
	OutputTokens     int64   `json:"output_tokens"`
	CacheReadTokens  int64   `json:"cache_read_input_tokens"`
	CacheWriteTokens int64   `json:"cache_creation_input_tokens"`
	Cents            float64 `json:"cents"`
}

// reportPageLimit is the most daily buckets one report page holds.
const reportPageLimit = 31

// report reads every page of a daily report from start on and hands each
// body to page.
func (c *Client) report(ctx context.Context, path string, q url.Values, page func([]byte) (next *string, err error)) error {
	q.Set("limit", strconv.Itoa(reportPageLimit))
	for {
		b, err := c.do(ctx, http.MethodGet, path+"?"+q.Encode(), nil)
		if err != nil {
			return err
		}
		next, err := page(b)
		if err != nil || next == nil {
			return err
		}
		q.Set("page", *next)
	}
}

// Usage reads the last days' tokens and spend, by day, key and model.
func (c *Client) Usage(ctx context.Context, days int, now time.Time) ([]UsageRow, error) {
	start := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, 1-days)
	rows := map[[3]string]*UsageRow{}
	row := func(day, key, model *string) *UsageRow {
		k := [3]string{(*day)[:min(10, len(*day))], deref(key), deref(model)}
		r := rows[k]
		if r == nil {
			r = &UsageRow{Day: k[0], Key: k[1], Model: k[2]}
			rows[k] = r
		}
		return r
	}
	q := url.Values{}
	q.Set("starting_at", start.Format(time.RFC3339))
	q.Set("bucket_width", "1d")
	q["group_by[]"] = []string{"api_key_id", "model"}
	err := c.report(ctx, "/v1/organizations/usage_report/messages", q, func(b []byte) (*string, error) {
		var rep struct {
			Data []struct {
				StartingAt string `json:"starting_at"`
				Results    []struct {
					Uncached      int64 `json:"uncached_input_tokens"`
					CacheCreation struct {
						H1 int64 `json:"ephemeral_1h_input_tokens"`
						M5 int64 `json:"ephemeral_5m_input_tokens"`
					} `json:"cache_creation"`
					CacheRead int64   `json:"cache_read_input_tokens"`
					Output    int64   `json:"output_tokens"`
					Requests  int64   `json:"requests"`
					Model     *string `json:"model"`
					APIKeyID  *string `json:"api_key_id"`
				} `json:"results"`
			} `json:"data"`
			NextPage *string `json:"next_page"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			return nil, fmt.Errorf("the gateway's usage report is unreadable: %v", err)
		}
		for _, d := range rep.Data {
			for _, u := range d.Results {
				r := row(&d.StartingAt, u.APIKeyID, u.Model)
				r.Requests += u.Requests
				r.InputTokens += u.Uncached
				r.OutputTokens += u.Output
				r.CacheReadTokens += u.CacheRead
				r.CacheWriteTokens += u.CacheCreation.H1 + u.CacheCreation.M5
			}
		}
		return rep.NextPage, nil
	})
	if err != nil {
		return nil, err
	}
	q = url.Values{}
	q.Set("starting_at", start.Format(time.RFC3339))
	q["group_by[]"] = []string{"api_key_id", "description"}
	err = c.report(ctx, "/v1/organizations/cost_report", q, func(b []byte) (*string, error) {
		var rep struct {
			Data []struct {
				StartingAt string `json:"starting_at"`
				Results    []struct {
					Amount   string  `json:"amount"`
					Model    *string `json:"model"`
					APIKeyID *string `json:"api_key_id"`
				} `json:"results"`
			} `json:"data"`
			NextPage *string `json:"next_page"`
		}
		if err := json.Unmarshal(b, &rep); err != nil {
			return nil, fmt.Errorf("the gateway's cost report is unreadable: %v", err)
		}
		for _, d := range rep.Data {
			for _, c := range d.Results {
				v, _ := strconv.ParseFloat(c.Amount, 64)
				row(&d.StartingAt, c.APIKeyID, c.Model).Cents += v
			}
		}
		return rep.NextPage, nil
	})
	if err != nil {
		return nil, err
	}
	// Never nil: --json prints [] for a quiet gateway, not null.
	out := make([]UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	slices.SortFunc(out, func(a, b UsageRow) int {
		return cmp.Or(cmp.Compare(a.Day, b.Day), cmp.Compare(a.Key, b.Key), cmp.Compare(a.Model, b.Model))
	})
	return out, nil
}

func deref(s *string) string {
	if s == nil {
		return "-"
	}
	return *s
}

// WriteUsage prints usage rows as a table with totals.
func WriteUsage(w io.Writer, rows []UsageRow) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DAY\tKEY\tMODEL\tREQUESTS\tINPUT\tOUTPUT\tCACHE READ\tCACHE WRITE\tSPEND\t")
	var t UsageRow
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t$%.4f\t\n", r.Day, r.Key, r.Model, r.Requests,
			r.InputTokens, r.OutputTokens, r.CacheReadTokens, r.CacheWriteTokens, r.Cents/100)
		t.Requests += r.Requests
		t.InputTokens += r.InputTokens
		t.OutputTokens += r.OutputTokens
		t.CacheReadTokens += r.CacheReadTokens
		t.CacheWriteTokens += r.CacheWriteTokens
		t.Cents += r.Cents
	}
	fmt.Fprintf(tw, "\t\ttotal\t%d\t%d\t%d\t%d\t%d\t$%.4f\t\n", t.Requests, t.InputTokens, t.OutputTokens, t.CacheReadTokens, t.CacheWriteTokens, t.Cents/100)
	return tw.Flush()
}
