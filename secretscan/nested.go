package secretscan

import (
	"strings"
	"unicode/utf8"
)

// A string's text may itself be JSON (a tool call's arguments, a tool
// result) whose strings carry their own escapes: a token spelled
// \u0067\u0068\u0070… there passes one decoding as those escapes, and the
// model reads the token (hostile pass 10, H10-11). A text with a \u
// escape is decoded once more, with each byte's place in the text kept,
// so that a secret found in it is replaced where it is written.

// nested is text with its JSON escapes decoded; from and to are, per
// decoded byte, the span of text that wrote it.
type nested struct {
	out      []byte
	from, to []int
}

// decodeNested decodes text's escapes; ok is false when it has no \u
// escape, the one a second decoding exists to catch.
func decodeNested(text string) (n nested, ok bool) {
	if !strings.Contains(text, `\u`) {
		return n, false
	}
	n.out = make([]byte, 0, len(text))
	n.from, n.to = make([]int, 0, len(text)), make([]int, 0, len(text))
	for i := 0; i < len(text); {
		start := i
		c := text[i]
		var piece []byte
		switch {
		case c != '\\' || i+1 >= len(text):
			piece, i = []byte{c}, i+1
		default:
			switch e := text[i+1]; e {
			case '"', '\\', '/':
				piece, i = []byte{e}, i+2
			case 'n':
				piece, i = []byte{'\n'}, i+2
			case 't':
				piece, i = []byte{'\t'}, i+2
			case 'r':
				piece, i = []byte{'\r'}, i+2
			case 'u':
				if r, ok := hexRune(text[i+2:]); ok && !(r >= 0xd800 && r < 0xe000) {
					piece, i = utf8.AppendRune(nil, r), i+6
				} else {
					piece, i = []byte{c}, i+1
				}
			default:
				piece, i = []byte{c}, i+1
			}
		}
		for _, b := range piece {
			n.out = append(n.out, b)
			n.from, n.to = append(n.from, start), append(n.to, i)
		}
	}
	return n, true
}

func hexRune(s string) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for i := 0; i < 4; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// scanNested finds the secrets of text's second decoding that its first
// did not show (those overlapping none of first, spans of text), as
// spans of text with their decoded values.
func (w *walker) scanNested(text string, first [][2]int) (spans [][2]int, values, rules []string) {
	n, ok := decodeNested(text)
	if !ok {
		return nil, nil, nil
	}
	for _, h := range w.rs.scan(unsafeString(n.out), w.s) {
		from, to := n.from[h.Start], n.to[h.End-1]
		overlaps := false
		for _, f := range first {
			overlaps = overlaps || (from < f[1] && f[0] < to)
		}
		if overlaps {
			continue
		}
		spans = append(spans, [2]int{from, to})
		values = append(values, string(n.out[h.Start:h.End]))
		rules = append(rules, h.Rule)
	}
	return spans, values, rules
}
