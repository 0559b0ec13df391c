package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/money"
)

var sonnet = anthropicPrices(3*mtok, 15*mtok)

// fixture holds records at bucket edges; the expected reports below are
// worked out by hand from these numbers.
func fixture(t testing.TB, s Store) {
	rec := func(at time.Time, alias, key, ws, tier string, in, w5, w1, read, out int64, p Prices) Record {
		r := Record{Time: at, RequestID: "req", KeyID: key, Workspace: ws, Alias: alias, ServiceTier: tier,
			UpstreamModel: "claude-sonnet-4-5-20250929", Provider: "anthropic", Status: 200, Outcome: "ok",
			InputTokens: in, CacheCreation5m: w5, CacheCreation1h: w1, CacheReadTokens: read, OutputTokens: out}
		if alias == "local" {
			r.UpstreamModel, r.Provider = "llama3.1", "ollama"
		}
		p.Apply(&r)
		return r
	}
	day := 24 * time.Hour
	batchPrices := Prices{Input: 1.5 * mtok, Output: 7.5 * mtok}
	recs := []Record{
		rec(t0, "claude", "alice", "frontend", "standard", 100, 10, 20, 30, 40, sonnet),                 // r1: first instant of 09-01
		rec(t0.Add(day-time.Microsecond), "local", "bob", "", "", 1000, 0, 0, 0, 500, Prices{}),         // r2: last instant of 09-01
		rec(t0.Add(day), "claude", "bob", "frontend", "batch", 300000, 0, 0, 0, 100, batchPrices),       // r3: first instant of 09-02
		rec(t0.Add(day+5*time.Hour), "claude", "alice", "frontend", "priority", 50, 0, 0, 0, 5, sonnet), // r4
		rec(t0.Add(12*time.Hour), "claude", "alice", "frontend", "standard", 0, 0, 0, 0, 0, sonnet),     // r5: failed, no usage
		rec(t0.Add(-time.Second), "claude", "alice", "frontend", "standard", 7, 0, 0, 0, 7, sonnet),     // r6: before range
		rec(t0.Add(3*day), "claude", "alice", "frontend", "standard", 9, 0, 0, 0, 9, sonnet),            // r7: at ending_at
	}
	if err := s.Insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

func usage(t *testing.T, s Store, query string) *UsageReportPage {
	t.Helper()
	q, err := ParseUsageQuery(mustValues(t, query), now)
	if err != nil {
		t.Fatal(err)
	}
	p, err := UsageReport(context.Background(), s, q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// compact renders a usage page as one line per bucket:
// "start: model/key/ws/tier/window=in,5m,1h,read,out×requests; ...", "-" for null.
func compact(p *UsageReportPage) []string {
	d := func(s *string) string {
		if s == nil {
			return "-"
		}
		return *s
	}
	var out []string
	for _, b := range p.Data {
		var rs []string
		for _, r := range b.Results {
			rs = append(rs, fmt.Sprintf("%s/%s/%s/%s/%s=%d,%d,%d,%d,%d×%d", d(r.Model), d(r.APIKeyID), d(r.WorkspaceID),
				d(r.ServiceTier), d(r.ContextWindow), r.UncachedInputTokens, r.CacheCreation.Ephemeral5m,
				r.CacheCreation.Ephemeral1h, r.CacheReadInputTokens, r.OutputTokens, r.Requests))
		}
		out = append(out, b.StartingAt[5:16]+": "+strings.Join(rs, "; "))
	}
	return out
}

func TestUsageReportAggregation(t *testing.T) { forEachStore(t, testUsageReportAggregation) }

func testUsageReportAggregation(t *testing.T, s Store) {
	fixture(t, s)
	const span = "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-04T00:00:00Z"
	tests := []struct {
		name, query string
		want        []string
	}{
		{"totals per day, empty day kept", span, []string{
			"09-01T00:00: -/-/-/-/-=1100,10,20,30,540×2",
			"09-02T00:00: -/-/-/-/-=300050,0,0,0,105×2",
			"09-03T00:00: ",
		}},
		{"model and context window", span + "&group_by[]=model&group_by[]=context_window", []string{
			"09-01T00:00: claude/-/-/-/0-200k=100,10,20,30,40×1; local/-/-/-/0-200k=1000,0,0,0,500×1",
			"09-02T00:00: claude/-/-/-/0-200k=50,0,0,0,5×1; claude/-/-/-/200k-1M=300000,0,0,0,100×1",
			"09-03T00:00: ",
		}},
		{"key, workspace, tier filtered to one model", span +
			"&group_by[]=api_key_id&group_by[]=workspace_id&group_by[]=service_tier&models[]=claude", []string{
			"09-01T00:00: -/alice/frontend/standard/-=100,10,20,30,40×1",
			"09-02T00:00: -/alice/frontend/priority/-=50,0,0,0,5×1; -/bob/frontend/batch/-=300000,0,0,0,100×1",
			"09-03T00:00: ",
		}},
		{"default workspace is null and empty tier is standard", span + "&group_by[]=workspace_id&group_by[]=service_tier", []string{
			"09-01T00:00: -/-/-/standard/-=1000,0,0,0,500×1; -/-/frontend/standard/-=100,10,20,30,40×1",
			"09-02T00:00: -/-/frontend/batch/-=300000,0,0,0,100×1; -/-/frontend/priority/-=50,0,0,0,5×1",
			"09-03T00:00: ",
		}},
		{"filters combine", span + "&api_key_ids[]=bob&service_tiers[]=batch&context_window[]=200k-1M", []string{
			"09-01T00:00: ",
			"09-02T00:00: -/-/-/-/-=300000,0,0,0,100×1",
			"09-03T00:00: ",
		}},
		{"hour buckets at the day boundary", "starting_at=2025-09-01T23:00:00Z&ending_at=2025-09-02T01:00:00Z&bucket_width=1h", []string{
			"09-01T23:00: -/-/-/-/-=1000,0,0,0,500×1",
			"09-02T00:00: -/-/-/-/-=300000,0,0,0,100×1",
		}},
		{"minute buckets, non-aligned start snaps down", "starting_at=2025-09-01T23:58:30Z&ending_at=2025-09-02T00:01:00Z&bucket_width=1m", []string{
			"09-01T23:58: ",
			"09-01T23:59: -/-/-/-/-=1000,0,0,0,500×1",
			"09-02T00:00: -/-/-/-/-=300000,0,0,0,100×1",
		}},
	}
	for _, tt := range tests {
		p := usage(t, s, tt.query)
		got := compact(p)
		if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
		if p.HasMore || p.NextPage != nil {
			t.Errorf("%s: has_more %v next_page %v", tt.name, p.HasMore, p.NextPage)
		}
	}
}

func TestUsageReportExactJSON(t *testing.T) { forEachStore(t, testUsageReportExactJSON) }

func testUsageReportExactJSON(t *testing.T, s Store) {
	fixture(t, s)
	p := usage(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-03T00:00:00Z&group_by[]=model&models[]=local")
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"data":[` +
		`{"starting_at":"2025-09-01T00:00:00Z","ending_at":"2025-09-02T00:00:00Z","results":[` +
		`{"uncached_input_tokens":1000,"cache_creation":{"ephemeral_1h_input_tokens":0,"ephemeral_5m_input_tokens":0},` +
		`"cache_read_input_tokens":0,"output_tokens":500,"server_tool_use":{"web_search_requests":0},` +
		`"model":"local","api_key_id":null,"workspace_id":null,"service_tier":null,"context_window":null,` +
		`"inference_geo":null,"account_id":null,"service_account_id":null,"requests":1,"cache_read_share":0}]},` +
		`{"starting_at":"2025-09-02T00:00:00Z","ending_at":"2025-09-03T00:00:00Z","results":[]}],` +
		`"has_more":false,"next_page":null}`
	if string(b) != want {
		t.Fatalf("got  %s\nwant %s", b, want)
	}
}

func TestUsageReportPaginationWalk(t *testing.T) { forEachStore(t, testUsageReportPaginationWalk) }

func testUsageReportPaginationWalk(t *testing.T, s Store) {
	fixture(t, s)
	base := "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-08T00:00:00Z&limit=3"
	var starts []string
	var pages int
	var total int64
	query := base
	for {
		p := usage(t, s, query)
		pages++
		if len(p.Data) > 3 {
			t.Fatalf("page %d has %d buckets, limit 3", pages, len(p.Data))
		}
		for _, b := range p.Data {
			starts = append(starts, b.StartingAt[:10])
			for _, r := range b.Results {
				total += r.UncachedInputTokens
			}
		}
		if !p.HasMore {
			if p.NextPage != nil {
				t.Fatal("next_page set on the last page")
			}
			break
		}
		if p.NextPage == nil || pages > 5 {
			t.Fatalf("page %d: has_more without next_page (or no end)", pages)
		}
		query = base + "&page=" + *p.NextPage
	}
	want := "2025-09-01 2025-09-02 2025-09-03 2025-09-04 2025-09-05 2025-09-06 2025-09-07"
	if pages != 3 || strings.Join(starts, " ") != want {
		t.Fatalf("%d pages, buckets %v", pages, starts)
	}
	if total != 1100+300050+9 { // r7 at 09-04 is inside this longer range
		t.Fatalf("uncached total over the walk = %d", total)
	}
}

func TestUsageReportDefaultEndIsNow(t *testing.T) { forEachStore(t, testUsageReportDefaultEndIsNow) }

func testUsageReportDefaultEndIsNow(t *testing.T, s Store) {
	fixture(t, s)
	// now is 2025-09-03T10:30Z: the 1d buckets run to the end of 09-03.
	p := usage(t, s, "starting_at=2025-09-01T00:00:00Z")
	if got := compact(p); len(got) != 3 || got[2] != "09-03T00:00: " {
		t.Fatalf("got %q", got)
	}
	// A start after now has no buckets.
	p = usage(t, s, "starting_at=2025-09-05T00:00:00Z")
	if len(p.Data) != 0 || p.HasMore || p.Data == nil {
		t.Fatalf("got %+v, want an empty (non-null) data list", p)
	}
}

func cost(t *testing.T, s Store, query string) *CostReportPage {
	t.Helper()
	q, err := ParseCostQuery(mustValues(t, query), now)
	if err != nil {
		t.Fatal(err)
	}
	p, err := CostReport(context.Background(), s, q)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCostReport(t *testing.T) { forEachStore(t, testCostReport) }

func testCostReport(t *testing.T, s Store) {
	fixture(t, s)
	const span = "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-04T00:00:00Z"
	// r1 costs 100*3e6 + 40*15e6 + 30*0.3e6 + 20*6e6 + 10*3.75e6 = 1,066,500,000 pico = 0.10665 cents;
	// r3 costs 300000*1.5e6 + 100*7.5e6 = 450,750,000,000 pico = 45.075 cents; r4 is priority (excluded).
	ungrouped := `{"data":[` +
		`{"starting_at":"2025-09-01T00:00:00Z","ending_at":"2025-09-02T00:00:00Z","results":[` +
		`{"amount":"0.10665","currency":"USD","cost_type":null,"description":null,"model":null,"token_type":null,` +
		`"service_tier":null,"context_window":null,"inference_geo":null,"workspace_id":null}]},` +
		`{"starting_at":"2025-09-02T00:00:00Z","ending_at":"2025-09-03T00:00:00Z","results":[` +
		`{"amount":"45.075","currency":"USD","cost_type":null,"description":null,"model":null,"token_type":null,` +
		`"service_tier":null,"context_window":null,"inference_geo":null,"workspace_id":null}]},` +
		`{"starting_at":"2025-09-03T00:00:00Z","ending_at":"2025-09-04T00:00:00Z","results":[]}],` +
		`"has_more":false,"next_page":null}`
	b, _ := json.Marshal(cost(t, s, span))
	if string(b) != ungrouped {
		t.Errorf("ungrouped:\n got %s\nwant %s", b, ungrouped)
	}

	p := cost(t, s, span+"&group_by[]=workspace_id&group_by[]=description")
	var lines []string
	for _, bk := range p.Data {
		for _, r := range bk.Results {
			lines = append(lines, fmt.Sprintf("%s %s %s|%s|%s|%s|%s|%s|%s", bk.StartingAt[:10], r.Amount, *r.CostType,
				*r.Description, *r.Model, *r.TokenType, *r.ServiceTier, *r.ContextWindow, *r.WorkspaceID))
		}
	}
	want := []string{
		"2025-09-01 0.03 tokens|Claude Sonnet 4.5 Usage - Input Tokens|claude|uncached_input_tokens|standard|0-200k|frontend",
		"2025-09-01 0.06 tokens|Claude Sonnet 4.5 Usage - Output Tokens|claude|output_tokens|standard|0-200k|frontend",
		"2025-09-01 0.0009 tokens|Claude Sonnet 4.5 Usage - Input Tokens, Cache Hit|claude|cache_read_input_tokens|standard|0-200k|frontend",
		"2025-09-01 0.012 tokens|Claude Sonnet 4.5 Usage - Input Tokens, Cache Write|claude|cache_creation.ephemeral_1h_input_tokens|standard|0-200k|frontend",
		"2025-09-01 0.00375 tokens|Claude Sonnet 4.5 Usage - Input Tokens, Cache Write|claude|cache_creation.ephemeral_5m_input_tokens|standard|0-200k|frontend",
		"2025-09-02 45.0 tokens|Claude Sonnet 4.5 Usage - Input Tokens|claude|uncached_input_tokens|batch|200k-1M|frontend",
		"2025-09-02 0.075 tokens|Claude Sonnet 4.5 Usage - Output Tokens|claude|output_tokens|batch|200k-1M|frontend",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("by workspace and description:\n got %q\nwant %q", lines, want)
	}
	if p.Data[0].Results[0].InferenceGeo != nil {
		t.Error("inference_geo not null")
	}

	// Cost pagination: limit 1 walks day by day.
	p = cost(t, s, span+"&limit=1")
	if len(p.Data) != 1 || !p.HasMore || p.NextPage == nil {
		t.Fatalf("limit=1: %+v", p)
	}
	p = cost(t, s, span+"&limit=1&page="+*p.NextPage)
	if len(p.Data) != 1 || p.Data[0].StartingAt != "2025-09-02T00:00:00Z" || p.Data[0].Results[0].Amount != "45.075" {
		t.Fatalf("second page: %+v", p.Data)
	}
}

func TestFormatCents(t *testing.T) {
	tests := []struct {
		pico int64
		want string
	}{
		{0, "0.0"},
		{4_200_000 * 3 * mtok, "1260.0"}, // the spec's 4.2M input tokens at $3/MTok
		{1, "0.0000000001"},
		{money.PicoPerCent, "1.0"},
		{123_789_120_000_000, "12378.912"},
		{-5 * money.PicoPerCent / 2, "-2.5"},
	}
	for _, tt := range tests {
		if got := formatCents(tt.pico); got != tt.want {
			t.Errorf("formatCents(%d) = %q, want %q", tt.pico, got, tt.want)
		}
	}
}

func TestDisplayName(t *testing.T) {
	tests := map[string]string{
		"claude-sonnet-4-5-20250929": "Claude Sonnet 4.5",
		"claude-opus-4-1":            "Claude Opus 4.1",
		"claude-3-5-haiku-latest":    "Claude 3.5 Haiku",
		"claude-sonnet-4-5@20250929": "Claude Sonnet 4.5",
		"gpt-4o":                     "gpt-4o",
		"models/gemini-2.5-pro":      "gemini-2.5-pro",
	}
	for in, want := range tests {
		if got := displayName(in, "alias"); got != want {
			t.Errorf("displayName(%q) = %q, want %q", in, got, want)
		}
	}
}

func BenchmarkUsageReport(b *testing.B) {
	s, err := OpenSQLite(filepath.Join(b.TempDir(), "ledger.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	const n = 100_000
	recs := make([]Record, 0, 1000)
	aliases := []string{"claude", "local", "coder", "gpt"}
	for i := range n {
		r := sampleRecord(0)
		r.Time = t0.Add(time.Duration(i) * (7 * 24 * time.Hour / n))
		r.Alias = aliases[i%len(aliases)]
		r.KeyID = fmt.Sprintf("key%d", i%20)
		recs = append(recs, r)
		if len(recs) == cap(recs) {
			if err := s.Insert(context.Background(), recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	q, err := ParseUsageQuery(mustValues(b,
		"starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-08T00:00:00Z&group_by[]=model&group_by[]=api_key_id"), now)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := UsageReport(context.Background(), s, q)
		if err != nil || len(p.Data) != 7 || len(p.Data[0].Results) != 20 {
			b.Fatalf("report: %v", err)
		}
	}
}

func TestUsageReportByUpstreamModel(t *testing.T) { forEachStore(t, testUsageReportByUpstreamModel) }

// testUsageReportByUpstreamModel: group_by[]=upstream_model splits an
// alias by the backend model that answered it, so requests a fallback
// answered (claude answered by echo, at $0) show as such; without it the
// field is left out, as Anthropic's report has no such dimension.
func testUsageReportByUpstreamModel(t *testing.T, s Store) {
	recs := []Record{
		{Time: t0, RequestID: "r1", KeyID: "alice", Alias: "claude", UpstreamModel: "claude-sonnet-4-5-20250929", Provider: "anthropic",
			Status: 200, Outcome: "ok", InputTokens: 100, OutputTokens: 10},
		{Time: t0.Add(time.Hour), RequestID: "r2", KeyID: "alice", Alias: "claude", UpstreamModel: "echo", Provider: "echo",
			Status: 200, Outcome: "ok", InputTokens: 7, OutputTokens: 3},
		{Time: t0.Add(2 * time.Hour), RequestID: "r3", KeyID: "alice", Alias: "claude", UpstreamModel: "echo", Provider: "echo",
			Status: 200, Outcome: "ok", InputTokens: 5, OutputTokens: 2},
	}
	if err := s.Insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	const span = "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z"
	p := usage(t, s, span+"&group_by[]=model&group_by[]=upstream_model")
	var got []string
	for _, r := range p.Data[0].Results {
		if r.Model == nil || r.UpstreamModel == nil {
			t.Fatalf("a grouped result without model or upstream_model: %+v", r)
		}
		got = append(got, fmt.Sprintf("%s→%s=%d,%d×%d", *r.Model, *r.UpstreamModel, r.UncachedInputTokens, r.OutputTokens, r.Requests))
	}
	if want := "claude→claude-sonnet-4-5-20250929=100,10×1; claude→echo=12,5×2"; strings.Join(got, "; ") != want {
		t.Errorf("by model and upstream model:\n got %q\nwant %q", strings.Join(got, "; "), want)
	}
	body, err := json.Marshal(usage(t, s, span+"&group_by[]=model"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(body), "upstream_model") {
		t.Errorf("upstream_model shown without group_by[]=upstream_model: %s", body)
	}
}
