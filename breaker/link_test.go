package breaker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// TestPauseWithoutPublicURLHasNoLink: the resume link's base is the
// configured public URL, never the caller's Host (a key holder could put
// a link to another site in the team chat). Without one, the chat line
// says how to resume with the CLI, and carries no link.
func TestPauseWithoutPublicURLHasNoLink(t *testing.T) {
	ch := &chat{}
	b := New(Options{Post: ch.post, Failed: func(err error) { t.Errorf("breaker failed: %v", err) }})
	c := newClaudeSession("run the tests")
	rules := &ledger.BreakerRules{Repeat: -1, Action: ActionPause}
	for i := range DefaultFailing {
		b.Admit(context.Background(), turnOf(c.turn("Bash", map[string]any{"command": fmt.Sprintf("go test ./pkg%d", i)}, "Exit code 1\n--- FAIL", true), rules))
	}
	b.Drain(context.Background())
	lines := ch.all()
	if len(lines) != 1 || strings.Contains(lines[0], "://") || !strings.Contains(lines[0], "Paused; resume: `caddy modelgate resume sess-1 --api-key-id alice-laptop`") {
		t.Fatalf("chat = %q, want one line with the CLI command and no link", lines)
	}
}
