package ledger

import (
	"errors"
	"net/url"
	"slices"
	"testing"
	"time"
)

var now = time.Date(2025, 9, 3, 10, 30, 0, 0, time.UTC)

func mustValues(t testing.TB, raw string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseUsageQueryErrors(t *testing.T) {
	tests := []struct{ query, param string }{
		{"", "starting_at"},
		{"starting_at=yesterday", "starting_at"},
		{"starting_at=2025-09-01", "starting_at"},
		{"starting_at=2025-09-01T00:00:00Z&starting_at=2025-09-02T00:00:00Z", "starting_at"},
		{"starting_at=2025-09-01T00:00:00Z&ending_at=soon", "ending_at"},
		{"starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-01T00:00:00Z", "ending_at"},
		{"starting_at=2025-09-02T00:00:00Z&ending_at=2025-09-01T00:00:00Z", "ending_at"},
		{"starting_at=2025-09-01T00:00:00Z&bucket_width=1w", "bucket_width"},
		{"starting_at=2025-09-01T00:00:00Z&bucket_width=1d&bucket_width=1h", "bucket_width"},
		{"starting_at=2025-09-01T00:00:00Z&limit=0", "limit"},
		{"starting_at=2025-09-01T00:00:00Z&limit=32", "limit"},
		{"starting_at=2025-09-01T00:00:00Z&limit=seven", "limit"},
		{"starting_at=2025-09-01T00:00:00Z&bucket_width=1h&limit=169", "limit"},
		{"starting_at=2025-09-01T00:00:00Z&bucket_width=1m&limit=1441", "limit"},
		{"starting_at=2025-09-01T00:00:00Z&page=abc", "page"},
		{"starting_at=2025-09-01T00:00:00Z&page=page_bm90IGEgdGltZQ==", "page"},             // "not a time"
		{"starting_at=2025-09-01T00:00:00Z&page=page_MjAyNS0wOC0zMVQwMDowMDowMFo=", "page"}, // before start
		{"starting_at=2025-09-01T00:00:00Z&page=page_MjAyNS0wOS0wMVQwMTowMDowMFo=", "page"}, // not day-aligned
		{"starting_at=2025-09-01T00:00:00Z&page=page_MjAyNS0xMC0wMVQwMDowMDowMFo=", "page"}, // past the end
		{"starting_at=2025-09-01T00:00:00Z&group_by[]=description", "group_by[]"},
		{"starting_at=2025-09-01T00:00:00Z&group_by=nope", "group_by[]"},
		{"starting_at=2025-09-01T00:00:00Z&service_tiers[]=gold", "service_tiers[]"},
		{"starting_at=2025-09-01T00:00:00Z&context_window[]=1M", "context_window[]"},
		{"starting_at=2025-09-01T00:00:00Z&modles[]=x", "modles[]"},
		{"starting_at=2025-09-01T00:00:00Z&inference_geos[]=us", "inference_geos[]"},
	}
	for _, tt := range tests {
		_, err := ParseUsageQuery(mustValues(t, tt.query), now)
		pe, ok := errors.AsType[*ParamError](err)
		if !ok {
			t.Errorf("%s: err = %v, want a ParamError", tt.query, err)
			continue
		}
		if pe.Param != tt.param {
			t.Errorf("%s: param = %q (%v), want %q", tt.query, pe.Param, err, tt.param)
		}
	}
}

func TestParseCostQueryErrors(t *testing.T) {
	tests := []struct{ query, param string }{
		{"", "starting_at"},
		{"starting_at=2025-09-01T00:00:00Z&bucket_width=1h", "bucket_width"},
		{"starting_at=2025-09-01T00:00:00Z&limit=0", "limit"},
		{"starting_at=2025-09-01T00:00:00Z&limit=32", "limit"},
		{"starting_at=2025-09-01T00:00:00Z&group_by[]=model", "group_by[]"},
		{"starting_at=2025-09-01T00:00:00Z&group_by[]=service_tier", "group_by[]"},
		{"starting_at=2025-09-01T00:00:00Z&models[]=claude", "models[]"},
		{"starting_at=2025-09-01T00:00:00Z&workspace_ids[]=w", "workspace_ids[]"},
		{"starting_at=2025-09-01T00:00:00Z&page=page_", "page"},
	}
	for _, tt := range tests {
		_, err := ParseCostQuery(mustValues(t, tt.query), now)
		pe, ok := errors.AsType[*ParamError](err)
		if !ok || pe.Param != tt.param {
			t.Errorf("%s: err = %v, want one naming %q", tt.query, err, tt.param)
		}
	}
}

func TestParseUsageQuery(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name  string
		query string
		want  ReportQuery
	}{
		{"defaults: 1d, limit 7, end after today's bucket",
			"starting_at=2025-09-01T00:00:00Z",
			ReportQuery{Start: t0, End: t0.Add(3 * day), Width: day, Limit: 7}},
		{"non-aligned start snaps to its bucket; ending_at keeps whole buckets only",
			"starting_at=2025-09-01T10:15:00Z&ending_at=2025-09-01T13:45:00Z&bucket_width=1h&limit=168",
			ReportQuery{Start: t0.Add(10 * time.Hour), End: t0.Add(13 * time.Hour), Width: time.Hour, Limit: 168}},
		{"both array forms, deduplicated, and filters",
			"starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-08T00:00:00Z&group_by[]=model&group_by=workspace_id" +
				"&group_by[]=model&models[]=claude&models=local&api_key_ids[]=alice&workspace_ids[]=w1" +
				"&service_tiers[]=batch&context_window[]=200k-1M&beta=true&limit=31",
			ReportQuery{Start: t0, End: t0.Add(7 * day), Width: day, Limit: 31,
				GroupBy: []string{"model", "workspace_id"}, Models: []string{"claude", "local"},
				APIKeyIDs: []string{"alice"}, WorkspaceIDs: []string{"w1"}, ServiceTiers: []string{"batch"},
				ContextWindows: []string{ContextWindowLarge}}},
		{"page token and 1m default limit",
			"starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-01T02:00:00Z&bucket_width=1m&page=" +
				url.QueryEscape(encodePage(t0.Add(time.Hour))),
			ReportQuery{Start: t0, End: t0.Add(2 * time.Hour), Width: time.Minute, Limit: 60,
				Page: t0.Add(time.Hour)}},
		{"offset times are converted to UTC",
			"starting_at=2025-09-01T02:00:00%2B02:00&ending_at=2025-09-02T00:00:00Z",
			ReportQuery{Start: t0, End: t0.Add(day), Width: day, Limit: 7}},
	}
	for _, tt := range tests {
		got, err := ParseUsageQuery(mustValues(t, tt.query), now)
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		if !sameQuery(got, tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
}

func sameQuery(a, b ReportQuery) bool {
	return a.Start.Equal(b.Start) && a.End.Equal(b.End) &&
		a.Width == b.Width && a.Limit == b.Limit && a.Page.Equal(b.Page) && slices.Equal(a.GroupBy, b.GroupBy) &&
		slices.Equal(a.Models, b.Models) && slices.Equal(a.APIKeyIDs, b.APIKeyIDs) &&
		slices.Equal(a.WorkspaceIDs, b.WorkspaceIDs) && slices.Equal(a.ServiceTiers, b.ServiceTiers) &&
		slices.Equal(a.ContextWindows, b.ContextWindows)
}

func TestParseCostQuery(t *testing.T) {
	got, err := ParseCostQuery(mustValues(t,
		"starting_at=2025-09-01T00:00:00Z&group_by[]=workspace_id&group_by[]=description&limit=31"), now)
	if err != nil {
		t.Fatal(err)
	}
	want := ReportQuery{Start: t0, End: t0.Add(3 * 24 * time.Hour), Width: 24 * time.Hour, Limit: 31, GroupBy: []string{"workspace_id", "description"}}
	if !sameQuery(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	got, err = ParseCostQuery(mustValues(t, "starting_at=2025-09-01T00:00:00Z"), now)
	if err != nil || got.Limit != 7 {
		t.Fatalf("default limit = %d, err %v", got.Limit, err)
	}
}

func TestPageTokenMatchesDocumentedScheme(t *testing.T) {
	// The provider's documented example token encodes 2025-05-14T00:00:00Z.
	const doc = "page_MjAyNS0wNS0xNFQwMDowMDowMFo="
	want := time.Date(2025, 5, 14, 0, 0, 0, 0, time.UTC)
	if got := encodePage(want); got != doc {
		t.Fatalf("encodePage = %q, want %q", got, doc)
	}
	if got, ok := decodePage(doc); !ok || !got.Equal(want) {
		t.Fatalf("decodePage = %v %v", got, ok)
	}
}
