package breaker

import (
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
