package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// The unread-cache rule: CacheAlertWrites writes and no read within the
// last CacheAlertWindow requests alert once; a read resets the session;
// requests without a session or input do not count.
func TestCacheWatch(t *testing.T) {
	var got []BudgetAlert
	c := NewCacheWatch(func(a BudgetAlert) { got = append(got, a) })
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	prices := ledger.Prices{Input: 3_000_000, CacheWrite5m: 3_750_000, CacheWrite1h: 6_000_000, CacheRead: 300_000}
	req := func(session string, i int, write, read int64) {
		c.Observe(&ledger.Record{Time: t0.Add(time.Duration(i) * time.Second), KeyID: "alice", SessionID: session, Agent: "claude-code",
			Alias: "sonnet", Outcome: ledger.OutcomeOK, InputTokens: 10, CacheCreation5m: write, CacheReadTokens: read, Prices: prices})
	}
	for i := 0; i < CacheAlertWrites-1; i++ {
		req("broken", i, 1000, 0)
	}
	if len(got) != 0 {
		t.Fatalf("alerted after %d writes: %+v", CacheAlertWrites-1, got)
	}
	req("broken", 10, 1000, 0)
	if len(got) != 1 {
		t.Fatalf("%d alerts after %d unread writes, want 1", len(got), CacheAlertWrites)
	}
	a := got[0]
	// Four writes of 1000 tokens at $3.75/M: $0.015.
	if a.Kind != AlertCacheUnread || a.Scope != ledger.ScopeSession || a.ScopeID != ledger.SessionScopeID("alice", "broken") ||
		a.Writes != CacheAlertWrites || a.Window != CacheAlertWrites || a.SpentPico != 4*1000*3_750_000 || !a.PeriodStart.Equal(t0.Truncate(24*time.Hour)) {
		t.Errorf("alert %+v", a)
	}
	text := AlertText(a)
	for _, w := range []string{"session broken (key alice, claude-code, model sonnet)", "4 cache writes and no cache read in its last 4 requests", "$0.015"} {
		if !strings.Contains(text, w) {
			t.Errorf("alert text %q lacks %q", text, w)
		}
	}
	// More unread writes do not repeat it.
	req("broken", 11, 1000, 0)
	if len(got) != 1 {
		t.Errorf("the alert repeated")
	}
	// A session that reads its cache never alerts, however much it writes.
	for i := 0; i < 3*CacheAlertWindow; i++ {
		read := int64(0)
		if i > 0 {
			read = 5000
		}
		req("healthy", i, 1000, read)
	}
	// Reads older than the window do not excuse new unread writes.
	for i := 0; i < CacheAlertWindow; i++ {
		req("late", i, 0, 0)
	}
	req("late", 20, 0, 500)
	for i := 0; i < CacheAlertWindow-1; i++ {
		req("late", 21+i, 100, 0)
	}
	if len(got) != 1 {
		t.Fatalf("late alerted while its read was still in its last %d requests", CacheAlertWindow)
	}
	req("late", 40, 100, 0)
	// Failures, sessionless requests and a nil watch are ignored.
	for i := 0; i < 2*CacheAlertWindow; i++ {
		c.Observe(&ledger.Record{Time: t0, KeyID: "alice", SessionID: "failed", Outcome: ledger.OutcomeError, CacheCreation5m: 1})
		c.Observe(&ledger.Record{Time: t0, KeyID: "alice", Outcome: ledger.OutcomeOK, CacheCreation5m: 1})
	}
	var nilWatch *CacheWatch
	nilWatch.Observe(&ledger.Record{SessionID: "x"})
	if len(got) != 2 || got[1].ScopeID != ledger.SessionScopeID("alice", "late") || got[1].Window != CacheAlertWindow || got[1].Writes != CacheAlertWindow {
		t.Errorf("alerts %+v: want broken's, then late's once its read left the window", got)
	}
	if c.Len() != 3 {
		t.Errorf("%d sessions watched, want 3", c.Len())
	}
}
