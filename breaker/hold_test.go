package breaker

import (
	"context"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// TestSessionTripHoldsItsConversation (hostile pass 10, H10-9): the turn
// that paused a session, retried under a new session id or none, is
// refused as the session's (naming the session to resume); another
// conversation under a new id, and one that only began with the same
// prompt, go on; the session's resume lifts the hold under every id.
func TestSessionTripHoldsItsConversation(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	sessionTripHoldsConversation(t, b, b, ch)
}

// TestRedisSessionTripHoldsItsConversation: the same on two instances
// sharing Redis, the retry on the instance that did not trip.
func TestRedisSessionTripHoldsItsConversation(t *testing.T) {
	a, b, ch := twoInstances(t)
	sessionTripHoldsConversation(t, a, b, ch)
}

func sessionTripHoldsConversation(t *testing.T, a, b *Breaker, ch *chat) {
	t.Helper()
	ctx := context.Background()
	rules := &ledger.BreakerRules{Action: ActionPause}
	c := newClaudeSession("refactor module x1")
	honest := newClaudeSession("refactor module x1")
	honest.turn("Read", map[string]any{"file_path": "go.mod"}, "module x1", false)
	var d Decision
	for i := range DefaultRepeat {
		d = a.Admit(ctx, turnOf(c.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), rules))
		if d.Refusal != nil && i+1 != DefaultRepeat {
			t.Fatalf("paused at turn %d, want %d", i+1, DefaultRepeat)
		}
	}
	if d.Refusal == nil {
		t.Fatal("the session was not paused")
	}
	tripping := c.body()
	// A session of the key with turns of its own before.
	old := newClaudeSession("write the docs")
	for i := range 2 {
		tr := turnOf(old.turn("Read", map[string]any{"file_path": "doc" + string(rune('a'+i))}, "text", false), rules)
		tr.Session = "sess-old"
		if d := b.Admit(ctx, tr); d.Refusal != nil {
			t.Fatalf("an unrelated session was held: %v", d.Refusal.Message)
		}
	}
	tr := turnOf(tripping, rules)
	tr.Session = "sess-old"
	if d := b.Admit(ctx, tr); d.Refusal == nil || !strings.Contains(d.Refusal.Message, "caddy modelgate resume sess-1 ") {
		t.Fatalf("the tripping turn under an older session id was served: %+v", d)
	}
	for _, x := range []*Breaker{a, b} {
		for _, id := range []int{7, -1} {
			d := x.Admit(ctx, rotating(tripping, id, rules))
			if d.Refusal == nil || d.Refusal.Status != 429 {
				t.Fatalf("the tripping turn retried under session %d was served", id)
			}
			if !strings.Contains(d.Refusal.Message, "caddy modelgate resume sess-1 ") {
				t.Fatalf("the refusal %q does not name the paused session", d.Refusal.Message)
			}
		}
	}
	if d := b.Admit(ctx, rotating(newClaudeSession("write the docs").turn("Read", map[string]any{"file_path": "README.md"}, "# x", false), 8, rules)); d.Refusal != nil {
		t.Fatalf("another conversation under a new id was held: %v", d.Refusal.Message)
	}
	if d := b.Admit(ctx, rotating(honest.body(), 9, rules)); d.Refusal != nil {
		t.Fatalf("a conversation that only began with the same prompt was held: %v", d.Refusal.Message)
	}
	a.Drain(ctx)
	lines := ch.all()
	if len(lines) != 1 {
		t.Fatalf("chat = %q, want the session's one trip", lines)
	}
	token := lines[0][strings.Index(lines[0], "t=")+2:]
	token = token[:strings.IndexAny(token, " )>")]
	if _, ok, err := b.Resume(ctx, "alice-laptop", "sess-1", token, "link"); !ok || err != nil {
		t.Fatalf("resume: %v %v", ok, err)
	}
	if d := a.Admit(ctx, rotating(tripping, 10, rules)); d.Refusal != nil {
		t.Fatalf("the resumed session's conversation is still held under a new id: %v", d.Refusal.Message)
	}
}
