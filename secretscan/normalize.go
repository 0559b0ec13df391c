package secretscan

import (
	"unicode"
	"unicode/utf8"
)

// Format characters (Unicode category Cf: zero-width spaces and joiners,
// the soft hyphen, bidirectional controls, tag characters) are invisible:
// one inside a token hides it from every rule while a model reads straight
// through it. scan matches the text without them and reports each hit
// over the original bytes, the format characters inside it included.

// scan returns the secrets in text, ordered by position, overlaps merged
// into the first (leftmost, then longest) hit.
func (rs *Rules) scan(text string, s *scratch) []Hit {
	if rs.clean == nil || !cacheable(text) {
		return rs.scanNormalized(text, s)
	}
	if rs.clean.has(text) {
		return nil
	}
	hits := rs.scanNormalized(text, s)
	if len(hits) == 0 {
		rs.clean.add(text)
		return nil
	}
	return hits
}

// scanNormalized is scan without the memory of clean texts.
func (rs *Rules) scanNormalized(text string, s *scratch) []Hit {
	first := firstFormatChar(text)
	if first < 0 {
		return rs.scanText(text, s)
	}
	s.norm, s.orig = s.norm[:0], s.orig[:0]
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf || i < first {
			s.norm = append(s.norm, c)
			s.orig = append(s.orig, int32(i))
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if !unicode.Is(unicode.Cf, r) {
			for k := 0; k < n; k++ {
				s.norm = append(s.norm, text[i+k])
				s.orig = append(s.orig, int32(i+k))
			}
		}
		i += n
	}
	hits := rs.scanText(unsafeString(s.norm), s)
	for i := range hits {
		hits[i].Start = int(s.orig[hits[i].Start])
		hits[i].End = int(s.orig[hits[i].End-1]) + 1
	}
	return hits
}

// firstFormatChar is the offset of text's first format character, or -1.
func firstFormatChar(text string) int {
	for i := 0; i < len(text); i++ {
		if text[i] < utf8.RuneSelf {
			continue
		}
		r, n := utf8.DecodeRuneInString(text[i:])
		if unicode.Is(unicode.Cf, r) {
			return i
		}
		i += n - 1
	}
	return -1
}
