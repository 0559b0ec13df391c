package secretscan

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// A string's text may itself be JSON (a tool call's arguments, a tool
// result) whose strings carry their own escapes: a token spelled
// \u0067\u0068\u0070… there passes one decoding as those escapes, and the
// model reads the token (hostile pass 10, H10-11). A text with a \u
// escape is decoded once more, with each byte's place in the text kept,
// so that a secret found in it is replaced where it is written.

// nested is text with its JSON escapes decoded; from and to are, per
// decoded byte, the span of text that wrote it. They are int32, not int:
// eight bytes for every byte of a string, not sixteen, since a client
// chooses how long its strings are (up to the body limit).
type nested struct {
	out      []byte
	from, to []int32
}

// decodeNested decodes text's escapes into n, reusing its buffers (a
// scratch's: a history's texts with escapes come back on every turn); ok
// is false when it has no \u escape, the one a second decoding exists to
// catch.
func decodeNested(text string, n *nested) (ok bool) {
	if !strings.Contains(text, `\u`) || len(text) > math.MaxInt32 {
		return false
	}
	n.out, n.from, n.to = n.out[:0], n.from[:0], n.to[:0]
	for i := 0; i < len(text); {
		start, wrote := i, len(n.out)
		c := text[i]
		i++
		if c == '\\' && i < len(text) {
			switch e := text[i]; e {
			case '"', '\\', '/':
				c, i = e, i+1
			case 'n':
				c, i = '\n', i+1
			case 't':
				c, i = '\t', i+1
			case 'r':
				c, i = '\r', i+1
			case 'u':
				if r, ok := jsonfast.Hex4([]byte(text[i+1 : min(i+5, len(text))])); ok && !(r >= 0xd800 && r < 0xe000) {
					n.out, i = utf8.AppendRune(n.out, r), i+5
				}
			}
		}
		if len(n.out) == wrote {
			n.out = append(n.out, c)
		}
		for range len(n.out) - wrote {
			n.from, n.to = append(n.from, int32(start)), append(n.to, int32(i))
		}
	}
	return true
}

// scanNested finds the secrets of text's second decoding that its first
// did not show (those overlapping none of first, spans of text), as
// spans of text with their decoded values.
func (w *walker) scanNested(text string, first [][2]int) (spans [][2]int, values, rules []string) {
	n := &w.s.nested
	if !decodeNested(text, n) {
		return nil, nil, nil
	}
	// Both lists are ordered by position without overlaps (mergeHits),
	// and from grows with the decoded offset: one walk of first for all
	// hits, not one per hit (a client's string may hold many of each).
	k := 0
	for _, h := range w.rs.scan(unsafeString(n.out), w.s) {
		from, to := int(n.from[h.Start]), int(n.to[h.End-1])
		for k < len(first) && first[k][1] <= from {
			k++
		}
		if k < len(first) && first[k][0] < to {
			continue // overlaps first[k]
		}
		spans = append(spans, [2]int{from, to})
		values = append(values, string(n.out[h.Start:h.End]))
		rules = append(rules, h.Rule)
	}
	return spans, values, rules
}
