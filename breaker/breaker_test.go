package breaker

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// claudeSession builds the Messages requests Claude Code sends, turn by
// turn: each turn the model's tool_use and the user's tool_result are
// added to the history.
type claudeSession struct {
	msgs []any
	n    int
}

func newClaudeSession(prompt string) *claudeSession {
	return &claudeSession{msgs: []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": prompt}}}}}
}

// turn adds a tool call and its result and returns the next request.
func (c *claudeSession) turn(tool string, input map[string]any, result string, isError bool) []byte {
	c.n++
	id := fmt.Sprintf("toolu_%03d", c.n)
	c.msgs = append(c.msgs,
		map[string]any{"role": "assistant", "content": []any{
			map[string]any{"type": "text", "text": "Let me try that."},
			map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input}}},
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": id, "content": result, "is_error": isError}}})
	return c.body()
}

func (c *claudeSession) body() []byte {
	b, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": true,
		"system": []any{map[string]any{"type": "text", "text": "You are Claude Code."}}, "messages": c.msgs})
	return b
}

type chat struct {
	mu    sync.Mutex
	lines []string
}

func (c *chat) post(_ context.Context, text string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, text)
	return nil
}

func (c *chat) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestBreaker(t *testing.T, store Store) (*Breaker, *chat, *clock) {
	t.Helper()
	ch := &chat{}
	clk := &clock{t: time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)}
	b := New(Options{Store: store, Post: ch.post, Now: clk.now, Failed: func(err error) { t.Errorf("breaker failed: %v", err) }, PublicURL: "https://gw.example/"})
	return b, ch, clk
}

func turnOf(body []byte, rules *ledger.BreakerRules) *Turn {
	return &Turn{Format: FormatMessages, Body: body, Session: "sess-1", KeyID: "alice-laptop", Agent: "claude-code", Rules: rules}
}

func TestRepeatedFailingBashWarnsOnce(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	c := newClaudeSession("fix the build")
	rules := &ledger.BreakerRules{}
	tripped := 0
	for i := range 5 {
		d := b.Admit(context.Background(), turnOf(c.turn("Bash", map[string]any{"command": "npm run build"}, "Exit code 2\nerror TS2304: Cannot find name 'foo'.", true), rules))
		if d.Refusal != nil || d.Body != nil {
			t.Fatalf("turn %d: warn must let the request go, got %+v", i+1, d)
		}
		b.Drain(context.Background())
		if n := len(ch.all()); n > tripped {
			tripped = n
			if i+1 != DefaultRepeat {
				t.Fatalf("tripped at turn %d, want %d", i+1, DefaultRepeat)
			}
		}
	}
	lines := ch.all()
	if len(lines) != 1 {
		t.Fatalf("chat lines = %q, want one", lines)
	}
	for _, want := range []string{"alice-laptop", "claude-code", "sess-1", "`Bash` call", "5 times", "spent so far"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("chat line %q lacks %q", lines[0], want)
		}
	}
	if strings.Contains(lines[0], "TS2304") || strings.Contains(lines[0], "npm run build") {
		t.Errorf("chat line carries content: %q", lines[0])
	}
}

func TestEditUndoCycleTrips(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	c := newClaudeSession("tidy the config")
	rules := &ledger.BreakerRules{Action: ActionNudge}
	var nudged []byte
	for i := range 6 {
		in := map[string]any{"file_path": "/src/app.go", "old_string": "a := 1", "new_string": "a := 2"}
		if i%2 == 1 {
			in = map[string]any{"file_path": "/src/app.go", "old_string": "a := 2", "new_string": "a := 1"}
		}
		d := b.Admit(context.Background(), turnOf(c.turn("Edit", in, "The file /src/app.go has been updated.", false), rules))
		if d.Body != nil {
			if i != 5 {
				t.Fatalf("nudged at turn %d, want 6", i+1)
			}
			nudged = d.Body
		}
	}
	b.Drain(context.Background())
	if nudged == nil {
		t.Fatal("the edit/undo cycle was not nudged")
	}
	var req struct {
		Messages []struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(nudged, &req); err != nil {
		t.Fatalf("nudged body is not JSON: %v", err)
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role != "user" || len(last.Content) != 2 || !strings.Contains(string(last.Content[1]), "loop breaker") ||
		!strings.Contains(string(last.Content[0]), "tool_result") {
		t.Fatalf("last message = %+v, want its tool_result then the note", last)
	}
	if lines := ch.all(); len(lines) != 1 || !strings.Contains(lines[0], "cycle of 2 turns 3 times") || !strings.Contains(lines[0], "sent a note") {
		t.Fatalf("chat = %q", lines)
	}
}

func TestFailingStreakPausesAndResumes(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	c := newClaudeSession("run the tests")
	rules := &ledger.BreakerRules{Repeat: -1, Action: ActionPause}
	var d Decision
	for i := range DefaultFailing {
		d = b.Admit(context.Background(), turnOf(c.turn("Bash", map[string]any{"command": fmt.Sprintf("go test ./pkg%d", i)}, "Exit code 1\n--- FAIL", true), rules))
		if d.Refusal != nil && i+1 != DefaultFailing {
			t.Fatalf("paused at turn %d", i+1)
		}
	}
	if d.Refusal == nil || d.Refusal.Status != http.StatusTooManyRequests || !d.Refusal.NoRetry {
		t.Fatalf("the failing streak did not pause: %+v", d)
	}
	if !strings.Contains(d.Refusal.Message, "caddy modelgate resume sess-1") || !strings.Contains(d.Refusal.Message, "6 turns in a row") {
		t.Errorf("refusal message %q does not say why and how to resume", d.Refusal.Message)
	}
	// The retry of the same request, and the next one, are held.
	if d := b.Admit(context.Background(), turnOf(c.body(), rules)); d.Refusal == nil {
		t.Fatal("a paused session's request went through")
	}
	// Another session of the same key goes on.
	other := turnOf(newClaudeSession("other").body(), rules)
	other.Session = "sess-2"
	if d := b.Admit(context.Background(), other); d.Refusal != nil {
		t.Fatalf("another session was held: %v", d.Refusal)
	}
	b.Drain(context.Background())
	lines := ch.all()
	if len(lines) != 1 || !strings.Contains(lines[0], "https://gw.example"+ResumePath+"?") {
		t.Fatalf("chat = %q, want one line with the resume link", lines)
	}
	link := lines[0][strings.Index(lines[0], "https://"):]
	link = link[:strings.IndexByte(link, ' ')]
	token := link[strings.Index(link, "t=")+2:]
	if _, ok, _ := b.Resume(context.Background(), "alice-laptop", "sess-1", "0000", "link"); ok {
		t.Fatal("a wrong token resumed the session")
	}
	if was, ok, _ := b.Resume(context.Background(), "alice-laptop", "sess-1", token, "link"); !ok || was != ActionPause {
		t.Fatalf("the link's token did not resume: was %q ok %v", was, ok)
	}
	if d := b.Admit(context.Background(), turnOf(c.turn("Bash", map[string]any{"command": "go vet"}, "ok", false), rules)); d.Refusal != nil {
		t.Fatalf("resumed session still held: %v", d.Refusal)
	}
}

func TestStopNeedsAnAdmin(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	c := newClaudeSession("x")
	rules := &ledger.BreakerRules{Repeat: 2, Action: ActionStop}
	var d Decision
	for range 2 {
		d = b.Admit(context.Background(), turnOf(c.turn("Read", map[string]any{"file_path": "/a"}, "same", false), rules))
	}
	if d.Refusal == nil || !strings.Contains(d.Refusal.Message, "admin") {
		t.Fatalf("stop did not refuse: %+v", d)
	}
	st, _, _ := b.Status(context.Background(), "alice-laptop", "sess-1")
	if st.State != "stopped" || st.Pattern != PatternRepeat || st.Trips != 1 {
		t.Fatalf("status = %+v", st)
	}
	if was, ok, _ := b.Resume(context.Background(), "alice-laptop", "sess-1", "anything", "link"); ok || was != ActionStop {
		t.Fatalf("a token cleared a stop: %q %v", was, ok)
	}
	if _, ok, _ := b.Resume(context.Background(), "alice-laptop", "sess-1", "", "admin"); !ok {
		t.Fatal("an admin could not clear the stop")
	}
}

func TestVelocityTrips(t *testing.T) {
	b, ch, clk := newTestBreaker(t, nil)
	c := newClaudeSession("x")
	rules := &ledger.BreakerRules{VelocityCents: 100}
	for i := range 20 {
		d := b.Admit(context.Background(), turnOf(c.turn("Read", map[string]any{"file_path": fmt.Sprint("/f", i)}, fmt.Sprint("content ", i), false), rules))
		b.Done(context.Background(), d, 40*money.PicoPerCent) // 40 cents a turn
		clk.t = clk.t.Add(10 * time.Second)
	}
	b.Drain(context.Background())
	lines := ch.all()
	if len(lines) != 1 || !strings.Contains(lines[0], "spending over $1.00 a minute") {
		t.Fatalf("chat = %q, want one velocity trip", lines)
	}
}

func TestRetryIsNotATurn(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	c := newClaudeSession("x")
	rules := &ledger.BreakerRules{Repeat: 2}
	body := c.turn("Read", map[string]any{"file_path": "/a"}, "same", false)
	for range 4 {
		b.Admit(context.Background(), turnOf(body, rules))
	}
	b.Drain(context.Background())
	if lines := ch.all(); len(lines) != 0 {
		t.Fatalf("retries of one request tripped: %q", lines)
	}
	st, _, _ := b.Status(context.Background(), "alice-laptop", "sess-1")
	if st.Turns != 1 {
		t.Fatalf("turns = %d, want 1", st.Turns)
	}
}

func TestUnwatchedWithoutRules(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	body := newClaudeSession("x").turn("Read", nil, "a", false)
	if d := b.Admit(context.Background(), &Turn{Format: FormatMessages, Body: body, Session: "s"}); d.scope != "" {
		t.Fatal("a request without rules was watched")
	}
	// Without a session, only the conversation under the key is watched.
	if d := b.Admit(context.Background(), &Turn{Format: FormatMessages, Body: body, Rules: &ledger.BreakerRules{}}); d.scope != "" || d.conversation == "" {
		t.Fatalf("a request without a session: %+v, want its conversation watched alone", d)
	}
	var nilB *Breaker
	if d := nilB.Admit(context.Background(), turnOf(body, &ledger.BreakerRules{})); d.Refusal != nil {
		t.Fatal("a nil breaker refused")
	}
}

func TestValidate(t *testing.T) {
	for _, bad := range []ledger.BreakerRules{{Repeat: 1}, {Repeat: 17}, {Cycle: 9}, {Failing: 33}, {Action: "explode"}} {
		if Validate(&bad) == nil {
			t.Errorf("%+v passed", bad)
		}
	}
	for _, good := range []ledger.BreakerRules{{}, {Repeat: -1, Cycle: 2, Failing: 32, Action: ActionPause}} {
		if err := Validate(&good); err != nil {
			t.Errorf("%+v: %v", good, err)
		}
	}
}

// TestTripNamesTheKeysOwner: a trip of a key minted for a person names
// them in the chat line.
func TestTripNamesTheKeysOwner(t *testing.T) {
	ch := &chat{}
	b := New(Options{Post: ch.post, Owner: func(id string) string {
		if id == "alice-laptop" {
			return "alice@example.com"
		}
		return ""
	}, Names: func(id string) string { return "laptop" }})
	c := newClaudeSession("x")
	for range 2 {
		b.Admit(context.Background(), turnOf(c.turn("Read", map[string]any{"file_path": "/a"}, "same", false), &ledger.BreakerRules{Repeat: 2}))
	}
	b.Drain(context.Background())
	if lines := ch.all(); len(lines) != 1 || !strings.Contains(lines[0], "alice@example.com, key laptop (alice-laptop)") {
		t.Fatalf("chat = %q", lines)
	}
}
