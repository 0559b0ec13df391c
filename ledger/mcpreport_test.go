package ledger

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

func TestMCPReport(t *testing.T) {
	s, err := OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	day := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	call := func(h int, server, tool, key string, o Outcome, ms int) Record {
		return Record{Time: day.Add(time.Duration(h) * time.Hour), KeyID: key, Workspace: "ws", Alias: server + "/" + tool,
			Provider: server, UpstreamModel: tool, Endpoint: EndpointMCP, Status: 200, Outcome: o, Latency: time.Duration(ms) * time.Millisecond,
			Bytes: int64(100 * ms)}
	}
	recs := []Record{
		call(1, "fs", "read_file", "alice", OutcomeOK, 10),
		call(2, "fs", "read_file", "bob", OutcomeError, 30),
		call(3, "every", "echo", "alice", OutcomeRefused, 1),
		call(26, "fs", "read_file", "alice", OutcomeOK, 5),
		{Time: day.Add(time.Hour), KeyID: "alice", Alias: "coder", UpstreamModel: "m", Provider: "p", Endpoint: EndpointMessages,
			Status: 200, Outcome: OutcomeOK, InputTokens: 10, OutputTokens: 5, CostPicoUSD: 100},
	}
	if err := s.Insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	v := url.Values{"starting_at": {"2026-03-02T00:00:00Z"}, "ending_at": {"2026-03-04T00:00:00Z"}, "group_by[]": {"server", "tool"}, "limit": {"1"}}
	q, err := ParseMCPQuery(v, day.Add(72*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	page, err := MCPReport(context.Background(), s, q)
	if err != nil {
		t.Fatal(err)
	}
	if !page.HasMore || page.NextPage == nil || len(page.Data) != 1 {
		t.Fatalf("page %+v", page)
	}
	res := page.Data[0].Results
	if len(res) != 2 || *res[0].Server != "every" || res[0].Refused != 1 || *res[1].Tool != "read_file" ||
		res[1].Calls != 2 || res[1].Errors != 1 || res[1].DurationMs != 40 || res[1].Bytes != 4000 || res[1].APIKeyID != nil {
		t.Fatalf("results %+v", res)
	}
	v.Set("page", *page.NextPage)
	if q, err = ParseMCPQuery(v, day.Add(72*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if page, err = MCPReport(context.Background(), s, q); err != nil {
		t.Fatal(err)
	}
	if page.HasMore || len(page.Data[0].Results) != 1 || page.Data[0].Results[0].Calls != 1 {
		t.Fatalf("second page %+v", page)
	}
	if _, err := ParseMCPQuery(url.Values{"starting_at": {"2026-03-02T00:00:00Z"}, "group_by[]": {"model"}}, day); err == nil {
		t.Fatal("group_by model accepted")
	}

	// Tool calls have no tokens: the token and cost reports leave them out.
	uq, err := ParseUsageQuery(url.Values{"starting_at": {"2026-03-02T00:00:00Z"}, "ending_at": {"2026-03-04T00:00:00Z"}, "group_by[]": {"model"}}, day)
	if err != nil {
		t.Fatal(err)
	}
	u, err := UsageReport(context.Background(), s, uq)
	if err != nil {
		t.Fatal(err)
	}
	if len(u.Data[0].Results) != 1 || *u.Data[0].Results[0].Model != "coder" || len(u.Data[1].Results) != 0 {
		t.Fatalf("usage report %+v", u.Data)
	}
	cq, err := ParseCostQuery(url.Values{"starting_at": {"2026-03-02T00:00:00Z"}, "ending_at": {"2026-03-04T00:00:00Z"}, "group_by[]": {"description"}}, day)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CostReport(context.Background(), s, cq)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range c.Data {
		for _, r := range b.Results {
			if r.Model != nil && *r.Model != "coder" {
				t.Fatalf("cost report shows %+v", r)
			}
		}
	}
	if len(c.Data[1].Results) != 0 {
		t.Fatalf("cost report's second day %+v", c.Data[1])
	}
}
