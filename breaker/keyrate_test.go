package breaker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// spendUntilHeld runs a loop whose every request evades the session and
// conversation views (a new session id each, and, with nonce, a first
// entry of its own), each costing cost in one minute, and returns the
// turn it was refused at, or -1.
func spendUntilHeld(t *testing.T, inst []*Breaker, rules *ledger.BreakerRules, cost int64, nonce bool, idFor func(int) int) (int, Decision) {
	t.Helper()
	ctx := context.Background()
	c := newClaudeSession("fix the build")
	for i := range 400 {
		c.turn("Read", map[string]any{"file_path": fmt.Sprint("/log/", i)}, fmt.Sprint("line ", i), false)
		if nonce {
			c.msgs[0] = map[string]any{"role": "user", "content": fmt.Sprintf("fix the build [%d]", i)}
		}
		b := inst[i%len(inst)]
		d := b.Admit(ctx, rotating(c.body(), idFor(i), rules))
		if d.Refusal != nil {
			return i, d
		}
		b.Done(ctx, d, cost)
	}
	return -1, Decision{}
}

// TestKeySpendRateTripsWhateverTheIDs: a loop that puts a nonce in its
// first entry and a new session id on every request is a new conversation
// each time; its spend still trips the key's spend rate ($10 a minute
// over five minutes by default: $50 in one minute), and the hold refuses
// every request of the key, not another key's.
func TestKeySpendRateTripsWhateverTheIDs(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	rules := &ledger.BreakerRules{Repeat: -1, Cycle: -1, Failing: -1, Action: ActionPause}
	at, d := spendUntilHeld(t, []*Breaker{b}, rules, 50*money.PicoPerCent, true, func(i int) int { return i })
	if at < 0 || at > 101 {
		t.Fatalf("a nonce-per-request loop at $0.50 a turn was held at turn %d; want by turn 101 ($50 spent)", at)
	}
	if !strings.Contains(d.Refusal.Message, KeySpendRate) || !strings.Contains(d.Refusal.Message, "whatever their session ids") {
		t.Errorf("refusal %q does not name the key's spend rate", d.Refusal.Message)
	}
	fresh := newClaudeSession("something else entirely")
	if d := b.Admit(context.Background(), rotating(fresh.body(), 1000, rules)); d.Refusal == nil {
		t.Error("another session of the held key went on")
	}
	other := rotating(fresh.body(), 1001, rules)
	other.KeyID = "bob-laptop"
	if d := b.Admit(context.Background(), other); d.Refusal != nil {
		t.Errorf("another key was held: %s", d.Refusal.Message)
	}
	b.Drain(context.Background())
	if lines := ch.all(); len(lines) != 1 || !strings.Contains(lines[0], KeySpendRate) {
		t.Errorf("chat = %q; want one line naming the key's spend rate", lines)
	}
	if _, ok, err := b.Resume(context.Background(), "alice-laptop", KeySpendRate, "", "admin"); err != nil || !ok {
		t.Fatalf("resume of the key's spend rate: %v %v", ok, err)
	}
	if d := b.Admit(context.Background(), rotating(fresh.body(), 1002, rules)); d.Refusal != nil {
		t.Errorf("the resumed key is held: %s", d.Refusal.Message)
	}
}

// TestKeySpendRateUndilutedByKeptIDs: keeping each id for 8 turns thins
// every session's and conversation's spend; the key's is all of it.
func TestKeySpendRateUndilutedByKeptIDs(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	rules := &ledger.BreakerRules{Repeat: -1, Cycle: -1, Failing: -1, VelocityCents: 200, Action: ActionStop}
	if at, _ := spendUntilHeld(t, []*Breaker{b}, rules, 20*money.PicoPerCent, false, func(i int) int { return i / 8 }); at < 0 || at > 251 {
		t.Fatalf("ids kept 8 turns at $0.20 a turn: held at turn %d; want by turn 251 ($50 spent)", at)
	}
}

// TestKeySpendRateOff: key_velocity off leaves only the other views.
func TestKeySpendRateOff(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	rules := &ledger.BreakerRules{Repeat: -1, Cycle: -1, Failing: -1, KeyVelocityCents: -1, Action: ActionStop}
	if at, _ := spendUntilHeld(t, []*Breaker{b}, rules, 50*money.PicoPerCent, true, func(i int) int { return i }); at != -1 {
		t.Fatalf("held at turn %d with key_velocity off", at)
	}
}

// TestRedisKeySpendRateAcrossInstances: the key's spend, served by two
// instances on one Redis in turn, trips once and holds on both.
func TestRedisKeySpendRateAcrossInstances(t *testing.T) {
	a, b, ch := twoInstances(t)
	rules := &ledger.BreakerRules{Repeat: -1, Cycle: -1, Failing: -1, Action: ActionStop}
	if at, _ := spendUntilHeld(t, []*Breaker{a, b}, rules, 50*money.PicoPerCent, true, func(i int) int { return i }); at < 0 || at > 101 {
		t.Fatalf("held at turn %d; want by turn 101 ($50 spent over both instances)", at)
	}
	fresh := newClaudeSession("something else entirely")
	for i, x := range []*Breaker{a, b} {
		if d := x.Admit(context.Background(), rotating(fresh.body(), 1000+i, rules)); d.Refusal == nil {
			t.Errorf("instance %d: the key's requests went on", i)
		}
	}
	a.Drain(context.Background())
	b.Drain(context.Background())
	if lines := ch.all(); len(lines) != 1 {
		t.Errorf("chat = %q; want one line", lines)
	}
}
