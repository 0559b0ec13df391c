package webhook

import (
	"strings"
	"testing"
)

// TestCleanMakesChatControlsText (H10-4): caller text in a chat line can
// neither ping the channel nor make a labelled link, in Slack's syntax
// (<!channel>, <url|label>, parsed even in code spans) or Discord's and
// Teams' markdown ([label](url)); the characters still read as written.
func TestCleanMakesChatControlsText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<!channel> <http://e|x>", "&lt;!channel&gt; &lt;http://e|x&gt;"},
		{"release week <!here> <http://evil.example/x|Approve>", "release week &lt;!here&gt; &lt;http://evil.example/x|Approve&gt;"},
		{"[Approve](https://evil.example/a)", "[Approve]\u200b(https://evil.example/a)"},
		{"a & b", "a &amp; b"},
		{"&lt;!here&gt;", "&amp;lt;!here&amp;gt;"},
		{"ping @here now", "ping @\u200bhere now"},
	} {
		got := Clean(tc.in, 200)
		if got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if strings.ContainsAny(got, "<>") || strings.Contains(got, "](") {
			t.Errorf("Clean(%q) = %q keeps a chat control", tc.in, got)
		}
	}
	// The cut counts the text as written, and never splits an entity.
	if got := Clean("<<<<", 2); got != "&lt;&lt;…" {
		t.Errorf("cut: %q", got)
	}
	// OneLine, for text read outside a chat, keeps the characters.
	if got := OneLine("a\n<b>\u200b [c](d)", 50); got != "a <b> [c](d)" {
		t.Errorf("OneLine: %q", got)
	}
}
