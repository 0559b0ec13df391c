package breaker

import (
	"context"
	"fmt"
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// TestMemoryFloodDoesNotLiftAStop: a stopped session outlives a flood of
// another key's one-shot session-less requests that fills the store many
// times over (a hostile review found 50,000 of them lifted an admin-only
// stop); the flood itself stays bounded.
func TestMemoryFloodDoesNotLiftAStop(t *testing.T) {
	const size = 1000
	mem := NewMemory(size)
	b, _, _ := newTestBreaker(t, mem)
	ctx := context.Background()
	rules := &ledger.BreakerRules{Action: ActionStop}
	c := newClaudeSession("fix the build")
	var d Decision
	for range DefaultRepeat {
		d = b.Admit(ctx, turnOf(c.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), rules))
	}
	if d.Refusal == nil {
		t.Fatal("setup: the session was not stopped")
	}
	for i := range 10 * size {
		q := newClaudeSession(fmt.Sprint("what is the capital of country #", i))
		tr := turnOf(q.turn("lookup", map[string]any{"q": i}, "ok", false), rules)
		tr.Session, tr.KeyID = fmt.Sprint("one-shot-", i), "some-app-key"
		b.Admit(ctx, tr)
	}
	if d := b.Admit(ctx, turnOf(c.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), rules)); d.Refusal == nil {
		t.Error("the flood of another key's requests lifted the stop")
	}
	mem.mu.Lock()
	n := mem.ll.Len()
	mem.mu.Unlock()
	if n > 2*size {
		t.Errorf("the store holds %d sessions; bound %d", n, 2*size)
	}
}
