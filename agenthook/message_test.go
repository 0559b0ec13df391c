package agenthook

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestBuildMessage(t *testing.T) {
	const sid = "00893aaf-19fa-41d2-8238-13269b9b3ca0"
	tests := []struct {
		name   string
		ev     Event
		agent  string
		force  string
		want   string
		wantOK bool
	}{
		{"stop", Event{HookEventName: "Stop", CWD: "/home/dev/shop", SessionID: sid}, "",
			"", "✅ Claude Code done — project: `shop` (session: `" + sid + "`)", true},
		{"stop trailing slash", Event{HookEventName: "Stop", CWD: "/home/dev/shop/", SessionID: "s"}, "",
			"", "✅ Claude Code done — project: `shop` (session: `s`)", true},
		{"stop windows cwd", Event{HookEventName: "Stop", CWD: `C:\Users\dev\shop`, SessionID: "s"}, "",
			"", "✅ Claude Code done — project: `shop` (session: `s`)", true},
		{"stop missing cwd", Event{HookEventName: "Stop", SessionID: "s"}, "",
			"", "✅ Claude Code done — project: `unknown` (session: `s`)", true},
		{"stop root cwd", Event{HookEventName: "Stop", CWD: "/", SessionID: "s"}, "",
			"", "✅ Claude Code done — project: `unknown` (session: `s`)", true},
		{"stop drive root cwd", Event{HookEventName: "Stop", CWD: `C:\`, SessionID: "s"}, "",
			"", "✅ Claude Code done — project: `unknown` (session: `s`)", true},
		{"stop missing session", Event{HookEventName: "Stop", CWD: "/a/b"}, "",
			"", "✅ Claude Code done — project: `b` (session: `unknown`)", true},
		{"stop blank session", Event{HookEventName: "Stop", CWD: "/a/b", SessionID: "  "}, "",
			"", "✅ Claude Code done — project: `b` (session: `unknown`)", true},
		{"stop missing everything", Event{HookEventName: "Stop"}, "",
			"", "✅ Claude Code done — project: `unknown` (session: `unknown`)", true},
		{"custom agent", Event{HookEventName: "Stop", CWD: "/a/b", SessionID: "s"}, "Codex",
			"", "✅ Codex done — project: `b` (session: `s`)", true},
		{"blank agent falls back", Event{HookEventName: "Stop", CWD: "/a/b", SessionID: "s"}, " ",
			"", "✅ Claude Code done — project: `b` (session: `s`)", true},
		{"escapes in project, session, agent", Event{HookEventName: "Stop", CWD: "/x/<!channel>&co", SessionID: "a>b"}, "R&D <bot>",
			"", "✅ R&amp;D &lt;bot&gt; done — project: `&lt;!channel&gt;&amp;co` (session: `a&gt;b`)", true},
		{"backtick cannot end the code span", Event{HookEventName: "Stop", CWD: "/x/we`ird", SessionID: "s`"}, "",
			"", "✅ Claude Code done — project: `we'ird` (session: `s'`)", true},
		{"newlines flattened", Event{HookEventName: "Notification", CWD: "/p/q", SessionID: "s", Message: "line one\nline  two"}, "",
			"", "⚠️ Claude Code needs your attention — project: `q` (session: `s`): line one line two", true},
		{"notification with message", Event{HookEventName: "Notification", CWD: "/w/api", SessionID: "s",
			Message: "Claude needs your permission to use Bash"}, "",
			"", "⚠️ Claude Code needs your attention — project: `api` (session: `s`): Claude needs your permission to use Bash", true},
		{"notification message escaped", Event{HookEventName: "Notification", CWD: "/w/api", SessionID: "s",
			Message: "<!here> & <https://evil|click>"}, "",
			"", "⚠️ Claude Code needs your attention — project: `api` (session: `s`): &lt;!here&gt; &amp; &lt;https://evil|click&gt;", true},
		{"notification without message", Event{HookEventName: "Notification"}, "",
			"", "⚠️ Claude Code needs your attention — project: `unknown` (session: `unknown`)", true},
		{"--event forces stop", Event{HookEventName: "Notification", CWD: "/a/b", SessionID: "s", Message: "m"}, "",
			"Stop", "✅ Claude Code done — project: `b` (session: `s`)", true},
		{"--event on empty input", Event{}, "", "notification",
			"⚠️ Claude Code needs your attention — project: `unknown` (session: `unknown`)", true},
		{"unhandled event", Event{HookEventName: "PreToolUse", CWD: "/a/b"}, "", "", "", false},
		{"no event at all", Event{}, "", "", "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := BuildMessage(tc.ev, tc.agent, tc.force)
			if got != tc.want || ok != tc.wantOK {
				t.Errorf("BuildMessage = %q, %v; want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

func TestParseEvent(t *testing.T) {
	ev, err := ParseEvent([]byte(`{"session_id":"s1","cwd":"/a/shop","hook_event_name":"Notification","message":"m",` +
		`"notification_type":"idle_prompt","title":"T","stop_hook_active":true,"unknown_field":{"x":[1]}}`))
	want := Event{HookEventName: "Notification", SessionID: "s1", CWD: "/a/shop", Message: "m",
		Title: "T", NotificationType: "idle_prompt", StopHookActive: true}
	if err != nil || ev != want {
		t.Errorf("ParseEvent = %+v, %v; want %+v", ev, err, want)
	}
	for _, bad := range []string{"", "   ", "{", "[1,2]", `"Stop"`, `{"cwd":5}`, "\xff\xfe"} {
		if ev, err := ParseEvent([]byte(bad)); err == nil || ev != (Event{}) {
			t.Errorf("ParseEvent(%q) = %+v, %v; want zero Event and an error", bad, ev, err)
		}
	}
}

func TestShellWords(t *testing.T) {
	for _, exe := range []string{"/usr/local/bin/caddy", "/Users/Jane Doe/bin/caddy", "/opt/it's/caddy", "C:/tools/caddy.exe"} {
		cmd := HookCommand(exe)
		word, rest, ok := cutShellWord(cmd)
		if !ok || word != exe || rest != " agent-hook" {
			t.Errorf("HookCommand(%q) = %q, which splits into %q, %q, %v", exe, cmd, word, rest, ok)
		}
	}
	if got := HookCommand("/usr/bin/caddy"); got != "/usr/bin/caddy agent-hook" {
		t.Errorf("plain path quoted needlessly: %q", got)
	}
}

// TestMessageValuesAreDefused: event values used to reach the chat as
// sent: broadcast mentions pinged everyone, bidi overrides reordered what
// a reader saw, and a long value made a page of text.
func TestMessageValuesAreDefused(t *testing.T) {
	ev := Event{
		CWD:       "/home/u/@everyone\u202Eevil",
		SessionID: "s\x00e\x1bss<!channel>",
		Message:   "Claude needs you @here and @Channel and @EVERYONE\u2066 now <!here|x> " + strings.Repeat("long ", 300),
	}
	for _, event := range []string{EventStop, EventNotification} {
		text, ok := BuildMessage(ev, "Agent @here", event)
		if !ok {
			t.Fatal("no message")
		}
		lower := strings.ToLower(text)
		for _, bad := range []string{"@everyone", "@here", "@channel", "<!", "\u202e", "\u2066", "\x00", "\x1b"} {
			if strings.Contains(lower, bad) {
				t.Errorf("%s message holds %q: %q", event, bad, text)
			}
		}
		if !strings.Contains(text, "@\u200beveryone") || !utf8.ValidString(text) || utf8.RuneCountInString(text) > 1000 {
			t.Errorf("%s message %q", event, text)
		}
	}
	text, _ := BuildMessage(ev, "", EventNotification)
	if !strings.HasSuffix(text, "…") {
		t.Errorf("a long message is cut with an ellipsis: %q", text)
	}
}

// TestMessageOfEscapedCharactersStaysShort: the bounds hold on the text
// as sent. 500 '<' in a notification were 2,000 characters once escaped,
// past Discord's limit on a message, which refused it and so lost it.
func TestMessageOfEscapedCharactersStaysShort(t *testing.T) {
	ev := Event{CWD: "/x/" + strings.Repeat("&", 400), SessionID: strings.Repeat(">", 400), Message: strings.Repeat("<", 2000)}
	text, ok := BuildMessage(ev, strings.Repeat("<", 400), EventNotification)
	if !ok {
		t.Fatal("no message")
	}
	if n := utf8.RuneCountInString(text); n > 1000 {
		t.Fatalf("message of %d characters: %.80q…", n, text)
	}
	if !strings.Contains(text, "&lt;&lt;") || !strings.HasSuffix(text, "…") {
		t.Fatalf("message %.80q… lost its escaped text or its cut mark", text)
	}
}

// FuzzBuildMessage: whatever the event, the message is one line of valid
// UTF-8, bounded, with no control or format characters and no live
// broadcast mention.
func FuzzBuildMessage(f *testing.F) {
	f.Add("/a/b", "sess", "hi @here <!channel>", "Agent")
	f.Add("\u202e", "\x00", "@EVERYONE\n\n@here", "")
	f.Fuzz(func(t *testing.T, cwd, session, msg, agent string) {
		text, ok := BuildMessage(Event{CWD: cwd, SessionID: session, Message: msg}, agent, EventNotification)
		if !ok {
			t.Fatal("no message")
		}
		if !utf8.ValidString(text) || utf8.RuneCountInString(text) > 1000 {
			t.Fatalf("message %q", text)
		}
		for _, r := range text {
			if r == '\n' || (unicode.IsControl(r)) || (unicode.Is(unicode.Cf, r) && r != '\u200b' && r != '\u200d' && r != '\ufe0f') {
				t.Fatalf("message holds %U: %q", r, text)
			}
		}
		lower := strings.ToLower(text)
		for _, bad := range []string{"@everyone", "@here", "@channel", "<"} {
			if strings.Contains(lower, bad) {
				t.Fatalf("message holds %q: %q", bad, text)
			}
		}
	})
}
