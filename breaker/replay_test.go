package breaker

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// progressingSession replays a long session of an agent that makes
// progress the way real ones do, turn by turn, with the habits that look
// like loops and are not: it re-reads files it just edited, runs the same
// test command again and again (each run fails differently until it
// passes), greps for names that are not there (exit code 1), checks git
// status after each change, re-reads an unchanged file now and then, a
// subagent explores in between under the same session id, and side
// requests (a title, a command's prefix) come without tools.
func progressingSession(seed uint64, turns int, visit func(body []byte, spent int64)) {
	rng := rand.New(rand.NewPCG(seed, 7))
	main := newClaudeSession("Add retries to the HTTP client and make the tests pass")
	sub := newClaudeSession("Find every caller of client.Do in the repository")
	fileVersion := map[string]int{}
	failing := 7 // tests failing; each fix makes fewer fail
	for i := 0; i < turns; i++ {
		if rng.IntN(9) == 0 {
			// A side request: its own one-message history.
			visit(newClaudeSession(fmt.Sprintf("Generate a title for: %d", i)).body(), 0)
			continue
		}
		if rng.IntN(6) == 0 {
			n := rng.IntN(40)
			var out string
			exit := rng.IntN(3) == 0
			if exit {
				out = "Exit code 1"
			} else {
				out = fmt.Sprintf("pkg/file%d.go:%d: client.Do(req)", n, rng.IntN(300))
			}
			visit(sub.turn("Bash", map[string]any{"command": fmt.Sprintf("grep -rn 'client.Do' pkg/dir%d", n)}, out, exit), 2e9)
			continue
		}
		file := fmt.Sprintf("/repo/pkg/http/client%d.go", rng.IntN(12))
		var body []byte
		switch k := rng.IntN(10); {
		case k < 3:
			body = main.turn("Read", map[string]any{"file_path": file}, fmt.Sprintf("%s v%d", file, fileVersion[file]), false)
		case k < 5:
			fileVersion[file]++
			body = main.turn("Edit", map[string]any{"file_path": file, "old_string": fmt.Sprintf("v%d", fileVersion[file]-1),
				"new_string": fmt.Sprintf("v%d", fileVersion[file])}, "The file "+file+" has been updated.", false)
			if failing > 0 && rng.IntN(3) == 0 {
				failing--
			}
		case k < 7:
			if failing > 0 {
				body = main.turn("Bash", map[string]any{"command": "go test ./pkg/http/..."},
					fmt.Sprintf("Exit code 1\n--- FAIL: %d tests (seed %d)", failing, rng.IntN(1e6)), true)
			} else {
				body = main.turn("Bash", map[string]any{"command": "go test ./pkg/http/..."}, fmt.Sprintf("ok  \tpkg/http\t%d.%03ds", rng.IntN(3), rng.IntN(1000)), false)
				failing = rng.IntN(4) // the next feature's tests
			}
		case k < 8:
			body = main.turn("Bash", map[string]any{"command": "git status --short"}, fmt.Sprintf(" M %s\n M go.sum %d", file, i), false)
		case k < 9:
			body = main.turn("Grep", map[string]any{"pattern": fmt.Sprintf("Retry%d", rng.IntN(20)), "path": "/repo"}, "No matches found", false)
		default:
			body = main.turn("TodoWrite", map[string]any{"todos": []any{map[string]any{"content": "retries", "status": "in_progress", "n": i}}},
				"Todos have been modified successfully.", false)
		}
		visit(body, 3e10) // 3 cents a turn
	}
}

// TestProgressingSessionNeverTrips replays long progressing sessions
// (four seeds, 600 turns each, a turn every 4 seconds) with every
// default rule on: none trips.
func TestProgressingSessionNeverTrips(t *testing.T) {
	for seed := range uint64(4) {
		b, ch, clk := newTestBreaker(t, nil)
		n := 0
		progressingSession(seed, 600, func(body []byte, spent int64) {
			n++
			d := b.Admit(context.Background(), turnOf(body, &ledger.BreakerRules{Turns: -1, Action: ActionPause}))
			if d.Refusal != nil {
				t.Fatalf("seed %d: turn %d of a progressing session was held: %s", seed, n, d.Refusal.Message)
			}
			b.Done(context.Background(), d, spent)
			clk.t = clk.t.Add(4 * time.Second)
		})
		b.Drain(context.Background())
		if lines := ch.all(); len(lines) != 0 {
			t.Fatalf("seed %d: a progressing session tripped: %q", seed, lines)
		}
	}
}

// BenchmarkAdmit is the breaker's cost per request of a long Claude Code
// session (a history of 200 turns, about 60 KB): the tail's scan and
// decode, the hashes, the store and the rules.
func BenchmarkAdmit(b *testing.B) {
	var bodies [][]byte
	progressingSession(1, 400, func(body []byte, _ int64) { bodies = append(bodies, body) })
	bodies = bodies[200:]
	br := New(Options{Now: func() time.Time { return time.Unix(1.8e9, 0) }})
	rules := &ledger.BreakerRules{}
	size := 0
	for _, x := range bodies {
		size += len(x)
	}
	b.SetBytes(int64(size / len(bodies)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d := br.Admit(context.Background(), turnOf(bodies[i%len(bodies)], rules))
		br.Done(context.Background(), d, money.PicoPerCent)
	}
}
