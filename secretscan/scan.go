package secretscan

import (
	"sort"
	"strings"
)

// Hit is one secret in a text: which rule found it and where its value
// lies, as byte offsets into the text scanned. It never holds the value.
type Hit struct {
	Rule       string
	Start, End int
}

// scratch is one scan's working memory, reused across the strings of a
// body so that a scan allocates only when it finds something.
type scratch struct {
	lower []byte
	on    []bool // rule index → a keyword of it occurs
	hits  []Hit
}

func (rs *Rules) newScratch() *scratch {
	return &scratch{on: make([]bool, len(rs.rules))}
}

// Scan returns the secrets in text, ordered by position, overlaps merged
// into the first (leftmost, then longest) hit.
func (rs *Rules) Scan(text string) []Hit {
	return rs.scan(text, rs.newScratch())
}

func (rs *Rules) scan(text string, s *scratch) []Hit {
	s.hits = s.hits[:0]
	if len(text) < minSecret {
		return nil
	}
	s.lower = appendLower(s.lower[:0], text)
	found := false
	rs.trie.Walk(s.lower, func(end, n, pattern int64) bool {
		for _, i := range rs.byKeyword[pattern] {
			s.on[i] = true
			found = true
		}
		return true
	})
	if found {
		for i := range rs.rules {
			if s.on[i] {
				s.on[i] = false
				rs.match(&rs.rules[i], text, s)
			}
		}
	}
	for _, i := range rs.always {
		rs.match(&rs.rules[i], text, s)
	}
	s.hits = rs.appendGeneric(s.hits, text)
	if len(s.hits) == 0 {
		return nil
	}
	return mergeHits(s.hits)
}

// minSecret is shorter than any secret the rules or the generic checks
// find: a text this short is not looked at.
const minSecret = 8

func (rs *Rules) match(r *rule, text string, s *scratch) {
	for _, m := range r.re.FindAllStringSubmatchIndex(text, -1) {
		start, end := m[0], m[1]
		// gitleaks trims newlines off a match before anything else.
		for start < end && text[start] == '\n' {
			start++
		}
		for end > start && text[end-1] == '\n' {
			end--
		}
		ss, se := start, end
		if len(m) >= 4 {
			if r.group > 0 {
				if 2*r.group+1 < len(m) && m[2*r.group] >= 0 {
					ss, se = m[2*r.group], m[2*r.group+1]
				}
			} else {
				for g := 1; 2*g+1 < len(m); g++ {
					if m[2*g] >= 0 && m[2*g+1] > m[2*g] {
						ss, se = m[2*g], m[2*g+1]
						break
					}
				}
			}
		}
		if ss < start || se > end || se <= ss {
			ss, se = start, end
		}
		secret := text[ss:se]
		if r.entropy != 0 && shannon(secret) <= r.entropy {
			continue
		}
		match := text[start:end]
		line := lineAround(text, start, end)
		if rs.global.allows(secret, match, line) {
			continue
		}
		allowed := false
		for i := range r.allow {
			if r.allow[i].allows(secret, match, line) {
				allowed = true
				break
			}
		}
		if !allowed {
			s.hits = append(s.hits, Hit{Rule: r.id, Start: ss, End: se})
		}
	}
}

func lineAround(text string, start, end int) string {
	ls := strings.LastIndexByte(text[:start], '\n') + 1
	le := strings.IndexByte(text[end:], '\n')
	if le < 0 {
		return text[ls:]
	}
	return text[ls : end+le]
}

func appendLower(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	return dst
}

// mergeHits sorts hits by start and folds overlapping ones into the first,
// widened to cover both: a placeholder must hide every byte any rule
// called secret.
func mergeHits(h []Hit) []Hit {
	sort.Slice(h, func(i, j int) bool {
		if h[i].Start != h[j].Start {
			return h[i].Start < h[j].Start
		}
		return h[i].End > h[j].End
	})
	out := make([]Hit, 0, len(h))
	for _, x := range h {
		if n := len(out); n > 0 && x.Start < out[n-1].End {
			if x.End > out[n-1].End {
				out[n-1].End = x.End
			}
			continue
		}
		out = append(out, x)
	}
	return out
}
