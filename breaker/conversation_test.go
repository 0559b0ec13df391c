package breaker

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// rotating is a turn of a loop that sends each request under a session id
// of its own (a wrapper minting one per call), or none when n is -1.
func rotating(body []byte, n int, rules *ledger.BreakerRules) *Turn {
	t := turnOf(body, rules)
	t.Session = ""
	if n >= 0 {
		t.Session = fmt.Sprintf("rot-%d", n)
	}
	return t
}

// TestRotatingSessionIDsTripTheConversation: the same failing call, each
// request under a new session id, pauses the conversation at the turn the
// rule names; the pause holds under the next new id, and its own link or
// command resumes it.
func TestRotatingSessionIDsTripTheConversation(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	testRotatingLoop(t, b, b, ch)
}

// TestRedisRotatingSessionIDsAcrossInstances: the rotating loop's turns
// alternate between two instances on one Redis; the conversation trips
// once, and both hold it.
func TestRedisRotatingSessionIDsAcrossInstances(t *testing.T) {
	a, b, ch := twoInstances(t)
	testRotatingLoop(t, a, b, ch)
}

func testRotatingLoop(t *testing.T, a, b *Breaker, ch *chat) {
	t.Helper()
	ctx := context.Background()
	c := newClaudeSession("fix the build")
	rules := &ledger.BreakerRules{Action: ActionPause}
	inst := []*Breaker{a, b}
	var d Decision
	for i := range DefaultRepeat {
		d = inst[i%2].Admit(ctx, rotating(c.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), i, rules))
		if d.Refusal != nil && i+1 != DefaultRepeat {
			t.Fatalf("paused at turn %d, want %d", i+1, DefaultRepeat)
		}
	}
	if d.Refusal == nil || d.Refusal.Status != 429 {
		t.Fatalf("a loop under a new session id per request was not paused: %+v", d)
	}
	if !strings.Contains(d.Refusal.Message, "caddy modelgate resume "+conversationPrefix) || !strings.Contains(d.Refusal.Message, "a new session id does not resume") {
		t.Errorf("refusal %q does not name the conversation and how to resume it", d.Refusal.Message)
	}
	// A new session id, and no session id, are held on both instances.
	for i, x := range inst {
		if d := x.Admit(ctx, rotating(c.body(), 100+i, rules)); d.Refusal == nil {
			t.Fatalf("instance %d: a new session id evaded the pause", i)
		}
		if d := x.Admit(ctx, rotating(c.body(), -1, rules)); d.Refusal == nil {
			t.Fatalf("instance %d: a request without a session evaded the pause", i)
		}
	}
	a.Drain(ctx)
	b.Drain(ctx)
	lines := ch.all()
	if len(lines) != 1 || !strings.Contains(lines[0], "session "+conversationPrefix) || !strings.Contains(lines[0], "`Bash` call") {
		t.Fatalf("chat = %q, want one line naming the conversation", lines)
	}
	link := lines[0][strings.Index(lines[0], "https://"):]
	link = link[:strings.IndexByte(link, ' ')]
	name := link[strings.Index(link, "s=")+2:]
	name = name[:strings.IndexByte(name, '&')]
	token := link[strings.Index(link, "t=")+2:]
	if st, ok, err := b.LinkStatus(ctx, "alice-laptop", name, token); err != nil || !ok || st.State != "paused" {
		t.Fatalf("the link's status = %+v %v %v", st, ok, err)
	}
	if _, ok, err := b.Resume(ctx, "alice-laptop", name, token, "link"); err != nil || !ok {
		t.Fatalf("the link did not resume the conversation: %v %v", ok, err)
	}
	if d := a.Admit(ctx, rotating(c.turn("Bash", map[string]any{"command": "make -k"}, "ok", false), 200, rules)); d.Refusal != nil {
		t.Fatalf("the resumed conversation is held: %v", d.Refusal)
	}
}

// TestSessionlessRunawayVelocityTrips: requests without a session id that
// spend fast trip the velocity rule of their conversation.
func TestSessionlessRunawayVelocityTrips(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	ctx := context.Background()
	c := newClaudeSession("summarise the logs")
	rules := &ledger.BreakerRules{VelocityCents: 10, Action: ActionStop}
	var held bool
	for i := range 6 {
		d := b.Admit(ctx, rotating(c.turn("Read", map[string]any{"file_path": fmt.Sprint("/log/", i)}, fmt.Sprint("line ", i), false), -1, rules))
		if d.Refusal != nil {
			held = true
			break
		}
		b.Done(ctx, d, 30*money.PicoPerCent)
	}
	b.Drain(ctx)
	if !held {
		t.Fatal("a sessionless runaway was not stopped")
	}
	if lines := ch.all(); len(lines) != 1 || !strings.Contains(lines[0], "a minute") {
		t.Fatalf("chat = %q, want one velocity trip", lines)
	}
}

// TestBusyKeyWithManySessionsDoesNotTrip: forty honest sessions on one
// key, their turns interleaved, twenty of them started with the same
// prompt, each running the same test command that fails differently until
// it passes and re-reading the files it edits, never trip, in their
// sessions or their conversations; and neither does a session whose id
// each of its requests keeps.
func TestBusyKeyWithManySessionsDoesNotTrip(t *testing.T) {
	b, ch, _ := newTestBreaker(t, nil)
	ctx := context.Background()
	rules := &ledger.BreakerRules{Repeat: 3, Cycle: 2, Failing: 3, VelocityCents: 50, Action: ActionStop}
	const sessions, turns = 40, 24
	cs := make([]*claudeSession, sessions)
	for i := range cs {
		prompt := "make the tests pass"
		if i%2 == 1 {
			prompt = fmt.Sprint("task ", i)
		}
		cs[i] = newClaudeSession(prompt)
		tr := turnOf(cs[i].body(), rules)
		tr.Session = fmt.Sprint("busy-", i)
		if d := b.Admit(ctx, tr); d.Refusal != nil {
			t.Fatalf("session %d's first request was held: %v", i, d.Refusal)
		}
	}
	for turn := range turns {
		for i, c := range cs {
			var body []byte
			switch turn % 3 {
			case 0:
				body = c.turn("Bash", map[string]any{"command": "go test ./..."}, fmt.Sprintf("Exit code 1\n--- FAIL: Test%d_%d", i, turn), true)
			case 1:
				body = c.turn("Edit", map[string]any{"file_path": fmt.Sprintf("/src/s%d.go", i), "old_string": fmt.Sprint(turn), "new_string": fmt.Sprint(turn + 1)}, "The file has been updated.", false)
			default:
				body = c.turn("Read", map[string]any{"file_path": fmt.Sprintf("/src/s%d.go", i)}, fmt.Sprintf("package s // v%d", turn), false)
			}
			tr := turnOf(body, rules)
			tr.Session = fmt.Sprint("busy-", i)
			goesOn(t, b, tr, 5*money.PicoPerCent, fmt.Sprintf("session %d turn %d", i, turn+1))
		}
	}
	noTrips(t, b, ch, "a busy key of progressing sessions")
}

// goesOn admits a turn that must go on as sent, and counts its cost.
func goesOn(t *testing.T, b *Breaker, tr *Turn, costPico int64, what string) {
	t.Helper()
	d := b.Admit(context.Background(), tr)
	if d.Refusal != nil || d.Body != nil {
		t.Fatalf("%s was held or nudged: %v", what, d.Refusal)
	}
	b.Done(context.Background(), d, costPico)
}

func noTrips(t *testing.T, b *Breaker, ch *chat, what string) {
	t.Helper()
	b.Drain(context.Background())
	if lines := ch.all(); len(lines) != 0 {
		t.Fatalf("%s tripped: %q", what, lines)
	}
}

// TestSessionlessAppSharingAFirstEntryDoesNotTrip: an app's requests
// without a session id, ten conversations at once that all start with the
// same instructions and call the same tool with the same result, spending
// fast together, never trip: their histories do not grow as one loop's.
func TestSessionlessAppSharingAFirstEntryDoesNotTrip(t *testing.T) {
	for _, name := range []string{"memory", "redis"} {
		t.Run(name, func(t *testing.T) {
			var b *Breaker
			var ch *chat
			if name == "memory" {
				b, ch, _ = newTestBreaker(t, nil)
			} else {
				b, _, ch = twoInstances(t)
			}
			rules := &ledger.BreakerRules{Repeat: 3, Cycle: 2, Failing: 3, VelocityCents: 10, Turns: 50, Action: ActionStop}
			cs := make([]*claudeSession, 10)
			for i := range cs {
				cs[i] = newClaudeSession("You answer questions about the weather.")
				cs[i].n = 1000 * (i + 1) // each conversation's tool call ids are its own
			}
			for turn := range 12 {
				for i, c := range cs {
					body := c.turn("get_weather", map[string]any{"city": "Paris"}, "sunny, 21C", false)
					goesOn(t, b, rotating(body, -1, rules), 20*money.PicoPerCent, fmt.Sprintf("conversation %d turn %d", i, turn+1))
				}
			}
			noTrips(t, b, ch, "an app's interleaved conversations")
		})
	}
}

func TestConversationViewIsTheSessionScope(t *testing.T) {
	v := conversationView("ci nightly", 0xabc)
	if v.name != ConversationID(0xabc) || v.scope != ledger.SessionScopeID("ci nightly", v.name) {
		t.Fatalf("view %+v", v)
	}
}

// TestPersonsConversationOverTheirKeys: a loop whose requests alternate
// between two keys minted for one person, each under a new session id,
// trips as one conversation of the person's; the pause holds on either
// key, not on another person's; a resume naming either key frees it.
func TestPersonsConversationOverTheirKeys(t *testing.T) {
	ch := &chat{}
	people := map[string]string{"dana-laptop": "oidc:dana", "dana-desktop": "oidc:dana", "erin-laptop": "oidc:erin"}
	b := New(Options{Post: ch.post, PersonOf: func(k string) string { return people[k] }, Failed: func(err error) { t.Errorf("breaker failed: %v", err) }})
	ctx := context.Background()
	c := newClaudeSession("fix the build")
	rules := &ledger.BreakerRules{Action: ActionStop}
	keys := []string{"dana-laptop", "dana-desktop"}
	turn := func(body []byte, key string, n int) Decision {
		tr := rotating(body, n, rules)
		tr.KeyID, tr.Owner = key, people[key]
		return b.Admit(ctx, tr)
	}
	var d Decision
	for i := range DefaultRepeat {
		d = turn(c.turn("Bash", map[string]any{"command": "make"}, "Exit code 2\nmake: *** No rule", true), keys[i%2], i)
	}
	if d.Refusal == nil || !strings.Contains(d.Refusal.Message, "caddy modelgate resume "+conversationPrefix) {
		t.Fatalf("a loop over two keys of one person was not stopped: %+v", d)
	}
	name := d.Refusal.Message[strings.Index(d.Refusal.Message, conversationPrefix):]
	name = name[:strings.IndexByte(name, ' ')]
	for _, k := range keys {
		if d := turn(c.body(), k, 100); d.Refusal == nil {
			t.Fatalf("key %s evaded the stop", k)
		}
	}
	if d := turn(c.body(), "erin-laptop", 101); d.Refusal != nil {
		t.Fatalf("another person's key was held: %v", d.Refusal)
	}
	if st, ok, err := b.Status(ctx, "dana-desktop", name); err != nil || !ok || st.State != "stopped" {
		t.Fatalf("status through the other key: %+v %v %v", st, ok, err)
	}
	if was, ok, err := b.Resume(ctx, "dana-desktop", name, "", "admin"); err != nil || !ok || was != ActionStop {
		t.Fatalf("an admin's resume naming the other key: %q %v %v", was, ok, err)
	}
	if d := turn(c.turn("Bash", map[string]any{"command": "make -k"}, "ok", false), keys[0], 102); d.Refusal != nil {
		t.Fatalf("the cleared conversation is held: %v", d.Refusal)
	}
}
