package breaker

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testlane"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/ratecount"
)

// twoInstances are two breakers, as two gateway instances would run them,
// on one Redis under a prefix of their own, posting to one chat.
func twoInstances(t *testing.T) (a, b *Breaker, ch *chat) {
	t.Helper()
	r, err := ratecount.Open(context.Background(), testlane.RedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	prefix := "test:breaker:" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"
	ch = &chat{}
	mk := func() *Breaker {
		return New(Options{Store: NewRedis(r.Client(), prefix), Post: ch.post, Failed: func(err error) { t.Errorf("breaker failed: %v", err) }, PublicURL: "https://gw.example/"})
	}
	return mk(), mk(), ch
}

// TestRedisTwoInstancesShareASession: a session whose turns alternate
// between two instances trips once, at the turn the rule names, and its
// chat line is posted once; the pause holds on both; a resume through
// either frees it on both.
func TestRedisTwoInstancesShareASession(t *testing.T) {
	a, b, ch := twoInstances(t)
	ctx := context.Background()
	c := newClaudeSession("build it")
	rules := &ledger.BreakerRules{Action: ActionPause}
	inst := []*Breaker{a, b}
	var held int
	for i := range DefaultRepeat {
		d := inst[i%2].Admit(ctx, turnOf(c.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), rules))
		if d.Refusal != nil {
			held = i + 1
		}
	}
	if held != DefaultRepeat {
		t.Fatalf("paused at turn %d, want %d (the turns of both instances counted as one session)", held, DefaultRepeat)
	}
	// The retry reaches the other instance: it holds the session too.
	for _, x := range inst {
		if d := x.Admit(ctx, turnOf(c.body(), rules)); d.Refusal == nil || d.Refusal.Status != 429 {
			t.Fatalf("an instance let a paused session through: %+v", d)
		}
	}
	a.Drain(ctx)
	b.Drain(ctx)
	lines := ch.all()
	if len(lines) != 1 {
		t.Fatalf("chat lines %q, want one", lines)
	}
	st, ok, err := b.Status(ctx, "alice-laptop", "sess-1")
	if err != nil || !ok || st.State != "paused" || st.Turns != DefaultRepeat {
		t.Fatalf("status from the other instance = %+v %v %v", st, ok, err)
	}
	token := lines[0][strings.Index(lines[0], "t=")+2:]
	token = token[:strings.IndexAny(token, " &")]
	if _, ok, err := b.Resume(ctx, "alice-laptop", "sess-1", token, "link"); err != nil || !ok {
		t.Fatalf("resume through the other instance: %v %v", ok, err)
	}
	if d := a.Admit(ctx, turnOf(c.turn("Bash", map[string]any{"command": "make -k"}, "ok", false), rules)); d.Refusal != nil {
		t.Fatalf("resumed session held: %v", d.Refusal)
	}
}

// TestRedisConcurrentTripOnce: both instances see the tripping turn at
// once (a subagent and its parent); one trips, one line is posted.
func TestRedisConcurrentTripOnce(t *testing.T) {
	a, b, ch := twoInstances(t)
	ctx := context.Background()
	c := newClaudeSession("x")
	rules := &ledger.BreakerRules{Repeat: 3}
	var bodies [][]byte
	for range 3 {
		bodies = append(bodies, c.turn("Read", map[string]any{"file_path": "/same"}, "same", false))
	}
	a.Admit(ctx, turnOf(bodies[0], rules))
	a.Admit(ctx, turnOf(bodies[1], rules))
	var wg sync.WaitGroup
	for _, x := range []*Breaker{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x.Admit(ctx, turnOf(bodies[2], rules))
		}()
	}
	wg.Wait()
	a.Drain(ctx)
	b.Drain(ctx)
	if lines := ch.all(); len(lines) != 1 {
		t.Fatalf("chat lines %q, want one", lines)
	}
	if n := a.TripCount(PatternRepeat, ActionWarn) + b.TripCount(PatternRepeat, ActionWarn); n != 1 {
		t.Fatalf("trips counted %d, want 1", n)
	}
}

// TestRedisVelocity: spend recorded on one instance trips the velocity
// rule on the other.
func TestRedisVelocity(t *testing.T) {
	a, b, ch := twoInstances(t)
	ctx := context.Background()
	c := newClaudeSession("x")
	rules := &ledger.BreakerRules{VelocityCents: 10}
	for i := range 4 {
		x := []*Breaker{a, b}[i%2]
		d := x.Admit(ctx, turnOf(c.turn("Read", map[string]any{"file_path": fmt.Sprint("/", i)}, fmt.Sprint(i), false), rules))
		x.Done(ctx, d, 30*1e10) // 30 cents
	}
	a.Drain(ctx)
	b.Drain(ctx)
	if lines := ch.all(); len(lines) != 1 || !strings.Contains(lines[0], "spending over $0.10 a minute") {
		t.Fatalf("chat lines %q, want one velocity trip", lines)
	}
}
