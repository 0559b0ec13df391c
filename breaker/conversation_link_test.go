package breaker

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// staggeredApp is a session-less app whose conversations all begin with
// one first entry, users arriving one per round and each round's
// youngest conversation answered first (its context is the shortest), so
// the depths a shared first entry sees rise from turn to turn. Every
// conversation calls the app's one tool with the same arguments, as
// honest users asking the same question do. A hostile review found it
// stopped in round 5, with every new user refused after.
func staggeredApp(t *testing.T, inst ...*Breaker) {
	t.Helper()
	ctx := context.Background()
	rules := &ledger.BreakerRules{Action: ActionStop}
	var cs []*claudeSession
	k := 0
	admit := func(body []byte, what string) {
		t.Helper()
		d := inst[k%len(inst)].Admit(ctx, rotating(body, -1, rules))
		k++
		if d.Refusal != nil {
			t.Fatalf("%s refused: %s", what, d.Refusal.Message)
		}
		inst[k%len(inst)].Done(ctx, d, money.PicoPerCent)
	}
	for round := range 8 {
		c := newClaudeSession("You answer questions about the weather.")
		c.n = 1000 * (round + 1)
		cs = append(cs, c)
		admit(c.body(), fmt.Sprintf("round %d: a new user's first request", round))
		for i := len(cs) - 2; i >= 0; i-- {
			admit(cs[i].turn("get_weather", map[string]any{"city": "Paris"}, "sunny, 21C", false), fmt.Sprintf("round %d: user %d's turn", round, i))
		}
	}
}

func TestStaggeredSessionlessAppIsNotStopped(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	staggeredApp(t, b)
}

func TestRedisStaggeredSessionlessAppIsNotStopped(t *testing.T) {
	a, b, _ := twoInstances(t)
	staggeredApp(t, a, b)
}

// TestConversationStopSparesAnHonestSessionWithTheSamePrompt: a person's
// loop under rotating ids is stopped; their interactive session, on its
// own id, which began with the same prompt but whose history is another,
// goes on.
func TestConversationStopSparesAnHonestSessionWithTheSamePrompt(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	honestSessionSpared(t, b, b)
}

func TestRedisConversationStopSparesAnHonestSession(t *testing.T) {
	a, b, _ := twoInstances(t)
	honestSessionSpared(t, a, b)
}

func honestSessionSpared(t *testing.T, a, b *Breaker) {
	t.Helper()
	ctx := context.Background()
	rules := &ledger.BreakerRules{Action: ActionStop}
	honest := newClaudeSession("fix the build")
	honest.n = 5000
	for i := range 3 {
		tr := turnOf(honest.turn("Read", map[string]any{"file_path": fmt.Sprint("/src/", i)}, "ok", false), rules)
		tr.Session = "interactive-1"
		goesOn(t, a, tr, money.PicoPerCent, "the honest session")
	}
	loop := newClaudeSession("fix the build")
	var d Decision
	for i := range DefaultRepeat {
		d = []*Breaker{a, b}[i%2].Admit(ctx, rotating(loop.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), i, rules))
	}
	if d.Refusal == nil {
		t.Fatal("the rotating loop was not stopped")
	}
	tr := turnOf(honest.turn("Edit", map[string]any{"file_path": "/src/x"}, "The file has been updated.", false), rules)
	tr.Session = "interactive-1"
	if d := b.Admit(ctx, tr); d.Refusal != nil {
		t.Fatalf("the honest session (own id, 4th turn) was refused: %s", d.Refusal.Message)
	}
	// The loop's next turn under yet another id is still refused.
	if d := a.Admit(ctx, rotating(loop.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), 99, rules)); d.Refusal == nil {
		t.Fatal("the stopped loop went on under a new id")
	}
}

// TestSlidingWindowLoopTrips: an agent that keeps its first entry and its
// last six (ordinary context trimming) has a history of constant depth;
// its turns still extend one another, so the loop trips.
func TestSlidingWindowLoopTrips(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	ctx := context.Background()
	rules := &ledger.BreakerRules{Action: ActionStop}
	c := newClaudeSession("fix the build")
	for range 50 {
		body := c.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true)
		if len(c.msgs) > 7 {
			c.msgs = append(c.msgs[:1:1], c.msgs[len(c.msgs)-6:]...)
			body = c.body()
		}
		if d := b.Admit(ctx, rotating(body, -1, rules)); d.Refusal != nil {
			return
		}
	}
	t.Fatal("50 identical failing turns of a sliding-window history never tripped")
}
