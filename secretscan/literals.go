package secretscan

import (
	"bytes"
	"regexp/syntax"
	"strings"
)

// A needed literal is a string every match of a rule's regex contains:
// a window that lacks one is not given to the regex. The rule's keyword
// opens the window, but a keyword is often an ordinary word ("secret"
// opens kubernetes-secret-yaml's 32 KB windows, which the regex then read
// for a "kind:" and a "data:" that Go source never has).
type needed struct {
	s    string // lower case when fold
	fold bool   // matched case-insensitively: looked up in the lower-cased text
}

// neededBytes is needed's string as bytes, made once at compile time for
// the lookups in the lower-cased copy.
type neededBytes struct {
	needed
	b []byte
}

// minNeeded is the shortest literal worth a lookup.
const minNeeded = 3

// neededOf is the needed literals of a rule's regular expression.
func neededOf(expr string) []neededBytes {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	var out []neededBytes
	for _, n := range neededLiterals(re) {
		out = append(out, neededBytes{needed: n, b: []byte(n.s)})
	}
	return out
}

// neededLiterals lists literals every match of re contains.
func neededLiterals(re *syntax.Regexp) []needed {
	switch re.Op {
	case syntax.OpLiteral:
		return literalParts(re)
	case syntax.OpCapture, syntax.OpPlus:
		return neededLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return neededLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		var out []needed
		for _, s := range re.Sub {
			out = append(out, neededLiterals(s)...)
		}
		return out
	case syntax.OpAlternate:
		out := neededLiterals(re.Sub[0])
		for _, s := range re.Sub[1:] {
			out = intersectNeeded(out, neededLiterals(s))
		}
		return out
	}
	return nil
}

// literalParts is a literal as needed strings. Case-insensitively, k and
// s also match the Kelvin sign and the long s, which the lower-cased copy
// of the text keeps as they are, so a folded literal is split around
// them (and around anything not ASCII).
func literalParts(re *syntax.Regexp) []needed {
	fold := re.Flags&syntax.FoldCase != 0
	if !fold {
		if s := string(re.Rune); len(s) >= minNeeded {
			return []needed{{s: s}}
		}
		return nil
	}
	var out []needed
	for _, part := range strings.FieldsFunc(strings.ToLower(string(re.Rune)), func(r rune) bool {
		return r == 'k' || r == 's' || r >= utf8Self
	}) {
		if len(part) >= minNeeded {
			out = append(out, needed{s: part, fold: true})
		}
	}
	return out
}

func intersectNeeded(a, b []needed) []needed {
	var out []needed
	for _, x := range a {
		for _, y := range b {
			if x == y {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// hasNeeded reports whether text[lo:hi] (lower, its lower-cased copy)
// holds every literal the rule needs.
func (r *rule) hasNeeded(text string, lower []byte, lo, hi int) bool {
	for _, n := range r.needs {
		if n.fold {
			if !bytes.Contains(lower[lo:hi], n.b) {
				return false
			}
		} else if !strings.Contains(text[lo:hi], n.s) {
			return false
		}
	}
	return true
}

// mayMatchAt reports whether the rule's regex can match through a keyword
// occurrence that ends at stop, by the shapes the rule's regex has.
func (r *rule) mayMatchAt(text string, stop int) bool {
	if r.assign != nil && !r.assign.allows(text, stop) {
		return false
	}
	return r.follow == nil || r.follow.allows(text, stop)
}
