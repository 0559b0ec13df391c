package ledger

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/money"
)

func work(t *testing.T, s Store, query string) *WorkReportPage {
	t.Helper()
	q, err := ParseWorkQuery(mustValues(t, query), now)
	if err != nil {
		t.Fatal(err)
	}
	p, err := WorkReport(context.Background(), s, q, WorkReportOptions{PersonOf: func(k string) string { return k + "@example.com" }})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// workLines renders a bucket's rows as "repo branch #pr ticket: cents
// sessions requests" for comparison.
func workLines(b WorkBucket) string {
	var lines []string
	for _, r := range b.Results {
		pr := "-"
		if r.PullRequest != nil {
			pr = fmt.Sprintf("#%d/%s", r.PullRequest.Number, r.PullRequest.State)
		}
		line := fmt.Sprintf("%s %s %s %s: %s s%d r%d", deref(r.Repository), deref(r.Branch), pr, deref(r.Ticket), r.Amount, r.Sessions, r.Requests)
		if r.Unattributed {
			line = "unattributed: " + r.Amount
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// A session that switches branch is split at the switch; a record before
// the session's first context takes it; a session without context is
// unattributed; a merged pull request takes its branch's work; the sums
// equal the cost report's.
func TestWorkReportSplitsByBranchAndPull(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		ws := s.(WorkStore)
		rec := func(min int, session string, cents int64) Record {
			r := sampleRecord(0)
			r.Time, r.SessionID, r.CostPicoUSD = t0.Add(time.Duration(min)*time.Minute), session, cents*money.PicoPerCent
			return r
		}
		recs := []Record{rec(1, "s1", 1), rec(5, "s1", 2), rec(11, "s1", 4), rec(12, "s1", 8), rec(3, "s2", 16), rec(4, "", 32)}
		if err := s.Insert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		for _, c := range []WorkContext{
			{KeyID: "alice", SessionID: "s1", Time: t0.Add(2 * time.Minute), Repo: "github.com/acme/shop", Branch: "feat/ABC-12-cart"},
			{KeyID: "alice", SessionID: "s1", Time: t0.Add(3 * time.Minute), Repo: "github.com/acme/shop", Branch: "feat/ABC-12-cart"}, // same: not stored
			{KeyID: "alice", SessionID: "s1", Time: t0.Add(10 * time.Minute), Repo: "github.com/acme/shop", Branch: "fix-login"},
			// Another key's context for the same session id does not apply.
			{KeyID: "bob", SessionID: "s2", Time: t0, Repo: "github.com/acme/other", Branch: "main"},
		} {
			if err := ws.PutWorkContext(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		p := work(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z&group_by[]=repository&group_by[]=branch&group_by[]=pull_request&group_by[]=ticket")
		want := "github.com/acme/shop fix-login - : 12.0 s1 r2\ngithub.com/acme/shop feat/ABC-12-cart - ABC-12: 3.0 s1 r2\nunattributed: 48.0"
		if got := workLines(p.Data[0]); got != want {
			t.Fatalf("by branch:\n got %s\nwant %s", got, want)
		}

		merged := Pull{Forge: "github", Repo: "github.com/acme/shop", Number: 7, Branch: "fix-login", Title: "Fix login (XYZ-9)", Author: "alice",
			State: PullMerged, OpenedAt: t0.Add(20 * time.Minute), MergedAt: t0.Add(time.Hour), UpdatedAt: t0.Add(time.Hour)}
		if err := ws.PutPull(ctx, merged); err != nil {
			t.Fatal(err)
		}
		// A late, older delivery does not reopen it.
		stale := merged
		stale.State, stale.MergedAt, stale.UpdatedAt = PullOpen, time.Time{}, t0.Add(20*time.Minute)
		if err := ws.PutPull(ctx, stale); err != nil {
			t.Fatal(err)
		}
		p = work(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z&group_by[]=pull_request&group_by[]=ticket")
		want = "github.com/acme/shop  #7/merged XYZ-9: 12.0 s1 r2\n  - ABC-12: 3.0 s1 r2\nunattributed: 48.0"
		if got := workLines(p.Data[0]); got != want {
			t.Fatalf("by pull request:\n got %s\nwant %s", got, want)
		}
		p = work(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z&pull_requests[]=7")
		if got := workLines(p.Data[0]); got != "  - : 12.0 s1 r2" {
			t.Fatalf("filtered to #7: %s", got)
		}
		p = work(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z&group_by[]=person")
		if r := p.Data[0].Results[0]; deref(r.Person) != "alice@example.com" || r.Sessions != 1 {
			t.Fatalf("by person: %+v", r)
		}

		var total int64
		for _, r := range work(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z").Data[0].Results {
			total += r.pico
		}
		c := cost(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z")
		if got := formatCents(total); got != c.Data[0].Results[0].Amount {
			t.Fatalf("work total %s, cost report %s", got, c.Data[0].Results[0].Amount)
		}

		first, err := ws.ClaimDelivery(ctx, "github", "d1", t0)
		again, err2 := ws.ClaimDelivery(ctx, "github", "d1", t0)
		if err != nil || err2 != nil || !first || again {
			t.Fatalf("claims: %v %v, %v %v", first, err, again, err2)
		}
		once, err := ws.MarkCommented(ctx, "github.com/acme/shop", 7, t0)
		twice, err2 := ws.MarkCommented(ctx, "github.com/acme/shop", 7, t0)
		if err != nil || err2 != nil || !once || twice {
			t.Fatalf("comment claims: %v %v, %v %v", once, err, twice, err2)
		}
	})
}

// Agents' work metrics: a cumulative series keeps its latest total, each
// delta point counts once however often it is sent, and the day's
// sessions are counted per key.
func TestAgentMetricsDay(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		ms := s.(AgentMetricStore)
		at := t0.Add(time.Hour)
		pt := func(session, attr string, series time.Time, v int64) AgentMetric {
			return AgentMetric{SessionID: session, Terminal: "tmux", Metric: "claude_code.lines_of_code.count", Attr: attr, Series: series, Time: at, Value: v}
		}
		for _, batch := range [][]AgentMetric{
			{pt("s1", "added", t0, 5), pt("s1", "added", t0, 8)},                  // cumulative: 8
			{pt("s2", "added", at, 3), pt("s2", "added", at.Add(time.Second), 4)}, // delta: 7
			{pt("s2", "added", at, 3)},                                            // a retry
			{pt("s2", "removed", at, 2)},
		} {
			if err := ms.PutAgentMetrics(ctx, "alice", batch); err != nil {
				t.Fatal(err)
			}
		}
		if err := ms.PutAgentMetrics(ctx, "bob", []AgentMetric{pt("s9", "added", t0, 1)}); err != nil {
			t.Fatal(err)
		}
		rows, err := ms.AgentMetricsDay(ctx, t0, []string{"alice"})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range rows {
			got = append(got, fmt.Sprintf("%s %s %s %s %d", r.KeyID, r.Metric, r.Attr, r.Terminal, r.Value))
		}
		want := "alice claude_code.lines_of_code.count added tmux 15\nalice claude_code.lines_of_code.count removed tmux 2\nalice sessions  tmux 2"
		if strings.Join(got, "\n") != want {
			t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), want)
		}
		if rows, _ := ms.AgentMetricsDay(ctx, t0.Add(24*time.Hour), nil); len(rows) != 0 {
			t.Fatalf("next day: %+v", rows)
		}
	})
}

// Retention takes the work rows only the purged records needed, and keeps
// the context in force at the cutoff.
func TestPurgeWork(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		ws := s.(WorkStore)
		cut := t0.Add(40 * 24 * time.Hour)
		for _, c := range []WorkContext{
			{KeyID: "k", SessionID: "old", Time: t0, Repo: "h.io/a/b", Branch: "x"},
			{KeyID: "k", SessionID: "live", Time: cut.Add(-2 * time.Hour), Repo: "h.io/a/b", Branch: "x"},
			{KeyID: "k", SessionID: "live", Time: cut.Add(-time.Hour), Repo: "h.io/a/b", Branch: "y"},
			{KeyID: "k", SessionID: "live", Time: cut.Add(time.Hour), Repo: "h.io/a/b", Branch: "z"},
		} {
			if err := ws.PutWorkContext(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := ws.ClaimDelivery(ctx, "github", "old", t0); err != nil {
			t.Fatal(err)
		}
		if _, err := s.(RecordPurger).PurgeRecords(ctx, cut); err != nil {
			t.Fatal(err)
		}
		var branches []string
		rows, err := s.(*sqlStore).db.Query(`SELECT session_id, branch FROM work_contexts ORDER BY at_us`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var sess, b string
			_ = rows.Scan(&sess, &b)
			branches = append(branches, sess+":"+b)
		}
		rows.Close()
		if strings.Join(branches, " ") != "live:y live:z" {
			t.Fatalf("contexts kept: %v", branches)
		}
		if again, _ := ws.ClaimDelivery(ctx, "github", "old", cut); !again {
			t.Fatal("an old delivery id outlived the retention")
		}
	})
}

// BenchmarkWorkRows is a month's work report over 50,000 records of 500
// sessions, each with two contexts (a branch switch half way).
func BenchmarkWorkRows(b *testing.B) {
	for _, sf := range storeFactories() {
		b.Run(sf.name, func(b *testing.B) {
			if sf.name == "postgres" && os.Getenv("MODELGATE_TEST_POSTGRES") == "" {
				b.Skip("no PostgreSQL")
			}
			s := sf.open(b)
			ctx := context.Background()
			const sessions, per = 500, 100
			recs := make([]Record, 0, sessions*per)
			for i := range sessions * per {
				r := sampleRecord(0)
				r.RequestID = fmt.Sprint("r", i)
				r.SessionID = fmt.Sprint("s", i%sessions)
				r.Time = t0.Add(time.Duration(i) * 40 * time.Second)
				recs = append(recs, r)
			}
			for i := 0; i < len(recs); i += 1000 {
				if err := s.Insert(ctx, recs[i:i+1000]); err != nil {
					b.Fatal(err)
				}
			}
			ws := s.(WorkStore)
			for i := range sessions {
				for j, br := range []string{"main", "feat"} {
					c := WorkContext{KeyID: "alice", SessionID: fmt.Sprint("s", i), Time: t0.Add(time.Duration(j) * 12 * 24 * time.Hour), Repo: "h.io/a/b", Branch: br}
					if err := ws.PutWorkContext(ctx, c); err != nil {
						b.Fatal(err)
					}
				}
			}
			f := Filter{From: t0, To: t0.Add(31 * 24 * time.Hour), ExcludeServiceTiers: priorityTiers()}
			b.ResetTimer()
			for b.Loop() {
				rows, err := ws.WorkRows(ctx, f, 24*time.Hour)
				if err != nil || len(rows) == 0 {
					b.Fatal(err)
				}
			}
		})
	}
}
