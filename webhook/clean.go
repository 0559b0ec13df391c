package webhook

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Clean makes s safe to insert into a one-line chat message, in or out of
// a code span: it is OneLine's text with the broadcast mentions @everyone,
// @here and @channel, which Discord, Teams and Slack (with link_names)
// turn into a ping of everyone, defused with a zero-width space after the
// @, and Escape's chat controls made text. Every value a chat line takes
// from a caller goes through it; a line's own links are added after.
//
// max bounds the value as sent, entities and zero-width spaces counted:
// a chat's length limit sees the escaped text (Discord refuses a message
// over 2,000 characters, and 500 '<' are 2,000 once escaped). A value cut
// ends with an ellipsis, never inside an entity.
func Clean(s string, max int) string {
	return cutSent(Escape(defuseMentions(OneLine(s, max))), max)
}

// CleanWhole is Clean without a cut, for a value that must stay whole
// (an id in a command line an admin copies) and whose length its caller
// already bounds: a cut there would print a wrong command.
func CleanWhole(s string) string {
	return Escape(defuseMentions(OneLine(s, len(s))))
}

// cutSent cuts a cleaned value to max runes and an ellipsis. Every '&' in
// a cleaned value begins an entity (Escape made a caller's own '&' one),
// so a cut after an '&' with no ';' since would split one: it moves back
// to before the '&'.
func cutSent(s string, max int) string {
	n := 0
	for i := range s {
		if n == max {
			if s[i:] == "…" { // OneLine's own cut, already marked
				return s
			}
			cut := s[:i]
			if amp := strings.LastIndexByte(cut, '&'); amp >= 0 && strings.IndexByte(cut[amp:], ';') < 0 {
				cut = cut[:amp]
			}
			return cut + "…"
		}
		n++
	}
	return s
}

// OneLine is s on one line, for text a person reads outside a chat (an
// MCP elicitation, a stored reason): whitespace runs become one space;
// control and format characters (bidi overrides that reorder what a
// reader sees, zero-width characters) are dropped; and the value is cut
// to max runes with an ellipsis.
func OneLine(s string, max int) string {
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
		// A pending space is written with the rune after it: both must fit.
		if n >= max || (space && n+1 >= max) {
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
	return b.String()
}

// chatControls are what chats read as controls rather than text: Slack
// parses &, < and > before its mrkdwn, code spans included (<!channel>,
// <https://x|Approve> are a ping and a labelled link), so they become the
// entities Slack shows as the characters; Discord's and Teams' markdown
// make [text](url) a labelled link, so a zero-width space parts "](".
// Nothing else is encoded: Slack would show other entities literally.
var chatControls = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "](", "]\u200b(")

// Escape makes every chat control in s text (chatControls).
func Escape(s string) string { return chatControls.Replace(s) }

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
