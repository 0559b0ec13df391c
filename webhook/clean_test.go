package webhook

import (
	"strings"
	"testing"
	"unicode/utf8"
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
	// The cut counts the text as sent, and never splits an entity.
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"<<<<", 8, "&lt;&lt;…"},
		{"<<<<", 6, "&lt;…"},
		{"<<<<", 16, "&lt;&lt;&lt;&lt;"},
		{"a&b", 3, "a…"},
		{"abcdef", 3, "abc…"},
		{"abc", 3, "abc"},
		{"@everyone", 2, "@e…"},
		{"@everyone now", 10, "@\u200beveryone…"},
	} {
		if got := Clean(tc.in, tc.max); got != tc.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	// OneLine's bound holds with a space before the cut.
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"a b", 2, "a…"},
		{"a b", 3, "a b"},
		{"ab  cd", 4, "ab c…"},
		{"ab  cd", 3, "ab…"},
	} {
		if got := OneLine(tc.in, tc.max); got != tc.want {
			t.Errorf("OneLine(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
	// OneLine, for text read outside a chat, keeps the characters.
	if got := OneLine("a\n<b>\u200b [c](d)", 50); got != "a <b> [c](d)" {
		t.Errorf("OneLine: %q", got)
	}
}

// TestCleanBoundsTheTextAsSent: whatever the caller's text, the cleaned
// value is at most max runes and an ellipsis, with every entity whole, so
// a chat line built from bounded values stays within the chat's limit.
func TestCleanBoundsTheTextAsSent(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("<", 500),
		strings.Repeat("&", 700),
		strings.Repeat("a<", 400),
		strings.Repeat("[x](y) ", 200),
		strings.Repeat("@here ", 200),
		strings.Repeat("é>", 300),
		strings.Repeat("a ", 400),
	} {
		for _, max := range []int{1, 5, 37, 120, 500} {
			checkBounded(t, in, max)
		}
	}
}

// FuzzClean holds Clean's and OneLine's bounds, and what Clean and
// CleanWhole defuse, on any text and bound.
func FuzzClean(f *testing.F) {
	f.Add("<!channel> & [a](b) @here", 7)
	f.Add(strings.Repeat("<", 50), 13)
	f.Fuzz(func(t *testing.T, in string, max int) {
		if max < 0 || max > 1000 {
			return
		}
		checkBounded(t, in, max)
	})
}

func checkBounded(t *testing.T, in string, max int) {
	t.Helper()
	if n := utf8.RuneCountInString(strings.TrimSuffix(OneLine(in, max), "…")); n > max {
		t.Errorf("OneLine(%.12q…, %d) is %d runes before its ellipsis", in, max, n)
	}
	got := Clean(in, max)
	if n := utf8.RuneCountInString(strings.TrimSuffix(got, "…")); n > max {
		t.Errorf("Clean(%.12q…, %d) is %d runes before its ellipsis", in, max, n)
	}
	// Every '&' begins a whole entity.
	for rest := got; ; {
		i := strings.IndexByte(rest, '&')
		if i < 0 {
			break
		}
		rest = rest[i:]
		if !strings.HasPrefix(rest, "&amp;") && !strings.HasPrefix(rest, "&lt;") && !strings.HasPrefix(rest, "&gt;") {
			t.Errorf("Clean(%.12q…, %d) = …%.12q: a split entity", in, max, rest)
			break
		}
		rest = rest[1:]
	}
	if strings.ContainsAny(got, "<>") || strings.Contains(got, "](") {
		t.Errorf("Clean(%.12q…, %d) keeps a chat control", in, max)
	}
	lower := strings.ToLower(got)
	for _, mention := range []string{"@everyone", "@here", "@channel"} {
		if strings.Contains(lower, mention) {
			t.Errorf("Clean(%.12q…, %d) keeps the mention %s", in, max, mention)
		}
	}
	if !utf8.ValidString(got) {
		t.Errorf("Clean(%.12q…, %d) is not UTF-8", in, max)
	}
	if whole := CleanWhole(in); strings.Contains(strings.ToLower(whole), "@here") || strings.ContainsAny(whole, "<>") || !utf8.ValidString(whole) {
		t.Errorf("CleanWhole(%.12q…) keeps a control", in)
	}
}
