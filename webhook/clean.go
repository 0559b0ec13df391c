package webhook

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean makes s safe to insert into a one-line chat message: whitespace
// runs become one space; control and format characters (bidi overrides that reorder what a reader sees, zero-width characters)
// are dropped; the broadcast mentions @everyone, @here and @channel, which
// Discord, Teams and Slack (with link_names) turn into a ping of everyone,
// are defused with a zero-width space after the @; and the value is cut to
// max runes with an ellipsis.
func Clean(s string, max int) string {
	var b strings.Builder
	space, n := false, 0
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = b.Len() > 0
			continue
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == utf8.RuneError:
			continue
		}
		if n >= max {
			b.WriteString("…")
			break
		}
		if space {
			b.WriteByte(' ')
			n++
			space = false
		}
		b.WriteRune(r)
		n++
	}
	return defuseMentions(b.String())
}

// defuseMentions puts a zero-width space after the @ of each broadcast
// mention, matched without regard to case.
func defuseMentions(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	var b strings.Builder
	for {
		i := strings.IndexByte(s, '@')
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+1])
		s = s[i+1:]
		for _, word := range [...]string{"everyone", "here", "channel"} {
			if len(s) >= len(word) && strings.EqualFold(s[:len(word)], word) {
				b.WriteString("\u200b")
				break
			}
		}
	}
}
