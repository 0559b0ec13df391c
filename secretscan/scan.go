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
	// Per rule, the window its keywords have opened so far (lo, hi) and
	// whether it is open.
	open   []bool
	lo, hi []int
	hits   []Hit
	// parts are the text-part windows by array depth, join a seam's text.
	parts []partWindow
	join  []byte
	// norm is a text without its format characters, orig each of its
	// bytes' offset in the text.
	norm []byte
	orig []int32
	// hex decodes a hex run; inner scans it (and looks for no hex inside).
	hex   []byte
	inner *scratch
	noHex bool
	// path and frames are a body walk's, kept for the next body.
	path   []pathElem
	frames []frame
	// nested is a text's second decoding (scanNested).
	nested nested
}

func (rs *Rules) newScratch() *scratch {
	n := len(rs.rules)
	return &scratch{open: make([]bool, n), lo: make([]int, n), hi: make([]int, n)}
}

// maxPooledScratch keeps a huge text's lower-case copy out of the pool.
const maxPooledScratch = 1 << 20

// getScratch and putScratch reuse the working memory across bodies.
func (rs *Rules) getScratch() *scratch {
	if s, ok := rs.scratches.Get().(*scratch); ok {
		return s
	}
	return rs.newScratch()
}

func (rs *Rules) putScratch(s *scratch) {
	if cap(s.lower) <= maxPooledScratch {
		s.hits = s.hits[:0]
		if cap(s.nested.out) > maxPooledScratch {
			s.nested = nested{}
		}
		rs.scratches.Put(s)
	}
}

// Scan returns the secrets in text, ordered by position, overlaps merged
// into the first (leftmost, then longest) hit.
func (rs *Rules) Scan(text string) []Hit {
	return rs.scan(text, rs.newScratch())
}

// scanText runs a rule only where one of its keywords occurs: in a window
// around each occurrence (windows that touch are one). For a rule whose
// matches may be longer than maxWindowSpan or cross many lines (private
// keys, Kubernetes secrets) the window is multiLineSpan either side;
// for the others it is the occurrence's line and the next one, cut to the
// rule's longest match either side: a match that contains the keyword and
// spans at most two lines is found, at a cost that grows with the
// occurrences, not the text (gitleaks runs every rule whose keyword occurs
// anywhere over the whole text: 4 MB/s on source code instead of 30+).
func (rs *Rules) scanText(text string, s *scratch) []Hit {
	s.hits = s.hits[:0]
	if len(text) < minSecret {
		return nil
	}
	s.lower = appendLower(s.lower[:0], text)
	rs.trie.Walk(s.lower, func(end, n, pattern int64) bool {
		start, stop := int(end-n+1), int(end+1)
		for _, i := range rs.byKeyword[pattern] {
			if !rs.rules[i].mayMatchAt(text, stop) {
				continue
			}
			var lo, hi int
			if span := rs.rules[i].span; span < 0 {
				lo, hi = max(start-multiLineSpan, 0), min(stop+multiLineSpan, len(text))
			} else {
				lo, hi = lineWindow(text, start, stop, span)
			}
			if s.open[i] && lo <= s.hi[i] {
				s.hi[i] = hi
				continue
			}
			if s.open[i] {
				rs.match(&rs.rules[i], text, s.lo[i], s.hi[i], s)
			}
			s.open[i], s.lo[i], s.hi[i] = true, lo, hi
		}
		return true
	})
	for i := range rs.rules {
		if s.open[i] {
			s.open[i] = false
			rs.match(&rs.rules[i], text, s.lo[i], s.hi[i], s)
		}
	}
	for _, i := range rs.always {
		rs.match(&rs.rules[i], text, 0, len(text), s)
	}
	s.hits = rs.appendGeneric(s.hits, text, s)
	if len(s.hits) == 0 {
		return nil
	}
	return mergeHits(s.hits)
}

// multiLineSpan reaches past the end of an 8192-bit RSA key in PEM.
const multiLineSpan = 16 << 10

// minSecret is shorter than any secret the rules or the generic checks
// find: a text this short is not looked at.
const minSecret = 8

// match runs r over text[lo:hi], the window widened to whitespace (at
// most 64 bytes further) so that \b and the rules' delimiters see what
// they would in the whole text.
func (rs *Rules) match(r *rule, text string, lo, hi int, s *scratch) {
	for k := 0; lo > 0 && k < 64 && !isSpace(text[lo-1]); k++ {
		lo--
	}
	for k := 0; hi < len(text) && k < 64 && !isSpace(text[hi]); k++ {
		hi++
	}
	if !r.hasNeeded(text, s.lower, lo, hi) {
		return
	}
	for _, m := range r.re.FindAllStringSubmatchIndex(text[lo:hi], -1) {
		for j := range m {
			if m[j] >= 0 {
				m[j] += lo
			}
		}
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
		line, whole := lineAround(text, start, end)
		if rs.global.allows(secret, match, line, whole) {
			continue
		}
		allowed := false
		for i := range r.allow {
			if r.allow[i].allows(secret, match, line, whole) {
				allowed = true
				break
			}
		}
		if !allowed {
			s.hits = append(s.hits, Hit{Rule: r.id, Start: ss, End: se})
		}
	}
}

// lineAround is the line of text holding text[start:end], which a line
// allowlist's regexes test. The search reaches at most maxLineReach bytes
// either side: a client's text may be one line of megabytes holding
// thousands of matches, and a whole line per match (found, then run
// through a line allowlist's regexes) cost time quadratic in the text.
// whole is false when the line was cut there: its regexes do not judge
// it, for an anchored one (^\s*#) would read the cut as the line's start,
// and a client could place what it allows exactly there.
func lineAround(text string, start, end int) (line string, whole bool) {
	lo, hi := max(0, start-maxLineReach), min(len(text), end+maxLineReach)
	i := strings.LastIndexByte(text[lo:start], '\n')
	ls := i + 1 + lo
	whole = i >= 0 || lo == 0
	le := strings.IndexByte(text[end:hi], '\n')
	if le < 0 {
		return text[ls:hi], whole && hi == len(text)
	}
	return text[ls : end+le], whole
}

// maxLineReach bounds lineAround's search either side of a match.
const maxLineReach = 4 << 10

// appendLower grows dst once (a 1 MB text's copy grew by doubling, 5 MB
// of garbage a scan) and lower-cases the copy in place.
func appendLower(dst []byte, s string) []byte {
	n := len(dst)
	dst = append(dst, s...)
	for i := n; i < len(dst); i++ {
		if c := dst[i]; 'A' <= c && c <= 'Z' {
			dst[i] = c + 'a' - 'A'
		}
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
			if generic(out[n-1].Rule) && !generic(x.Rule) {
				out[n-1].Rule = x.Rule // name it by the rule that knows what it is
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// lineWindow is the line holding text[start:stop] and the line after it,
// no more than span bytes either side of the occurrence.
func lineWindow(text string, start, stop, span int) (int, int) {
	lo := max(start-span, 0)
	if i := strings.LastIndexByte(text[lo:start], '\n'); i >= 0 {
		lo += i + 1
	}
	hi := min(stop+span, len(text))
	if i := strings.IndexByte(text[stop:hi], '\n'); i >= 0 {
		next := stop + i + 1
		if j := strings.IndexByte(text[next:hi], '\n'); j >= 0 {
			hi = next + j
		}
	}
	return lo, hi
}

// generic rules say only that something looks secret.
func generic(rule string) bool {
	return rule == RuleHighEntropy || rule == "generic-api-key"
}
