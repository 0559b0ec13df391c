package secretscan

import (
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// scanName looks for a secret in a member's name: a tool argument or a
// metadata key may be the credential itself. A redacted name keeps its
// object valid: it is unique among the object's names.
func (w *walker) scanName(elem pathElem, start, end int, escaped bool) {
	if end-start-2 < minSecret {
		return
	}
	text := w.textOf(start, end, escaped)
	hits := w.rs.scan(text, w.s)
	if len(hits) == 0 {
		return
	}
	w.path = append(w.path, elem)
	loc := w.location()
	w.path = w.path[:len(w.path)-1]
	var name []byte
	last := 0
	for _, h := range hits {
		d := Detection{Rule: h.Rule, Location: loc}
		if w.names != nil {
			d.Placeholder = w.names.Placeholder(h.Rule, text[h.Start:h.End])
			name = append(append(name, text[last:h.Start]...), d.Placeholder...)
			last = h.End
		}
		w.dets = append(w.dets, d)
	}
	if w.names == nil {
		return
	}
	name = append(name, text[last:]...)
	w.edits = append(w.edits, edit{start: start, end: end, escaped: escaped, isName: true, name: w.uniqueName(string(name))})
}

// uniqueName is name, or name with " (n)" after it, so that it differs
// from every other name of the object being walked.
func (w *walker) uniqueName(name string) string {
	f := &w.frames[len(w.frames)-1]
	if f.names == nil {
		f.names = objectNames(w.src, f.start)
	}
	taken := func(s string) bool {
		for _, n := range f.names {
			if n == s {
				return true
			}
		}
		for _, n := range f.renamed {
			if n == s {
				return true
			}
		}
		return false
	}
	candidate := name
	for n := 2; taken(candidate); n++ {
		candidate = name + " (" + strconv.Itoa(n) + ")"
	}
	f.renamed = append(f.renamed, candidate)
	return candidate
}

// objectNames are the member names of the object whose '{' is at
// src[start], decoded; the object is known to be well formed up to the
// member being walked, and reading stops at the end of src.
func objectNames(src []byte, start int) []string {
	names := []string{}
	depth, expectName := 0, false
	for i := start; i < len(src); i++ {
		switch src[i] {
		case '{':
			depth++
			expectName = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return names
			}
		case ',':
			expectName = depth == 1
		case '"':
			end, escaped, err := stringEnd(src, i)
			if err != nil {
				return names
			}
			if expectName {
				raw := src[i+1 : end-1]
				if escaped {
					raw = jsonfast.AppendUnescaped(nil, raw)
				}
				names = append(names, string(raw))
				expectName = false
			}
			i = end - 1
		}
	}
	return names
}
