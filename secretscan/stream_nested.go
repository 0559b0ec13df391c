package secretscan

import (
	"bytes"
	"slices"
	"strings"
)

// A streamed answer's text may be JSON too (a tool call's arguments),
// spelling a token with \u escapes that the first decoding of the event
// leaves as they are (hostile pass 10, H10-11; nested.go does the same
// for requests). Two things make the stream redactor see such a token: a
// channel holds back a word with a \u escape up to escapedCarry bytes
// rather than maxCarry (a token of 40 characters takes 240 bytes
// escaped), so that it is scanned whole; and a text with a \u escape is
// scanned decoded once more, a secret found there replaced where it is
// written (the JSON text staying valid: a placeholder has no quote or
// backslash).

// escapedCarry bounds the delta text held back when its last word has a
// \u escape.
const escapedCarry = 6 * maxCarry

// carryBound is how much of text's end may be held back: more when its
// last word (from ws) is spelled with escapes.
func carryBound(text []byte, ws int) int {
	if bytes.Contains(text[ws:], []byte(`\u`)) {
		return escapedCarry
	}
	return maxCarry
}

// hitsIn scans text (normalized: without the memory of clean texts) and,
// when it has a \u escape, its second decoding; values[i], when set, is
// the decoded secret of hits[i] (a placeholder numbers the secret, not
// its spelling). Hits are ordered by position and do not overlap.
func (sr *StreamRedactor) hitsIn(text string, normalized bool) (hits []Hit, values []string) {
	if normalized {
		hits = sr.rules.scanNormalized(text, sr.s)
	} else {
		hits = sr.rules.scan(text, sr.s)
	}
	if !strings.Contains(text, `\u`) {
		return hits, nil
	}
	n := &sr.s.nested
	if !decodeNested(text, n) {
		return hits, nil
	}
	hits = slices.Clone(hits) // the next scan reuses the scratch
	// Both scans' hits are ordered without overlaps: one walk finds the
	// new ones and one merge places them, where a search and an insert
	// per hit cost the product of their counts.
	var add []Hit
	var addValues []string
	k := 0
	for _, h := range sr.rules.scanNormalized(unsafeString(n.out), sr.s) {
		from, to := int(n.from[h.Start]), int(n.to[h.End-1])
		for k < len(hits) && hits[k].End <= from {
			k++
		}
		if k < len(hits) && hits[k].Start < to || len(add) > 0 && add[len(add)-1].End > from {
			continue
		}
		add = append(add, Hit{Rule: h.Rule, Start: from, End: to})
		addValues = append(addValues, string(n.out[h.Start:h.End]))
	}
	merged := make([]Hit, 0, len(hits)+len(add))
	values = make([]string, 0, len(hits)+len(add))
	for i, j := 0, 0; i < len(hits) || j < len(add); {
		if j == len(add) || i < len(hits) && hits[i].Start < add[j].Start {
			merged, values = append(merged, hits[i]), append(values, "")
			i++
		} else {
			merged, values = append(merged, add[j]), append(values, addValues[j])
			j++
		}
	}
	return merged, values
}

// valueOf is hit i's secret as a placeholder names it.
func valueOf(text string, hits []Hit, values []string, i int) string {
	if i < len(values) && values[i] != "" {
		return values[i]
	}
	return text[hits[i].Start:hits[i].End]
}
