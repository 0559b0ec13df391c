package secretscan

import (
	"regexp/syntax"
	"strings"
	"unicode"
)

// assignInfix is what gitleaks' generator writes between a rule's
// identifier and its secret in every "semi-generic" rule (generic-api-key
// and most vendor rules whose key has no fixed prefix): a short
// name tail, an assignment operator and opening quotes. 96 of the 222
// rules have it; generic-api-key's keywords (key, token, secret, api,
// access, auth, password…) are everyday words, so in prose and code the
// rule's regex (an NFA with a 50-wide leading repetition) ran over most
// lines and cost most of a scan.
const assignInfix = `(?:[ \t\w.-]{0,20})[\s'"]{0,3}(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)[\x60'"\s=]{0,5}`

// assignPrefix is what precedes the identifier group in those rules.
const assignPrefix = `[\w.-]{0,50}?(?:`

// The widths the infix allows: up to 23 bytes between the identifier and
// the operator, and up to 9 (the longest operator, :::=, and five quotes
// or spaces) between the operator's first byte and the secret.
const (
	maxBeforeOp  = 20 + 3
	maxOpToValue = 4 + 5
)

// assignShape is a semi-generic rule's necessary condition, checked at
// each keyword occurrence before its window is opened: the regex can
// match through an occurrence only if an assignment operator follows
// the keyword within maxBeforeOp bytes and a run of at least minValue
// bytes the secret group can be made of starts within maxOpToValue
// bytes after it. The check is a superset of the regex (it reads wider
// character classes and accepts on any non-ASCII byte, which (?i) can
// fold into ASCII letters), so it never drops a match the regex makes.
type assignShape struct {
	minValue int
	value    [256]bool // ASCII bytes the secret group can contain
}

// compileAssign returns the rule's shape, or nil when its regex is not a
// semi-generic one whose identifier always ends with one of keywords
// (then the rule runs in every keyword window, as before).
func compileAssign(expr string, keywords []string) *assignShape {
	at := strings.Index(expr, assignInfix)
	if at < 0 {
		return nil
	}
	flags, head := "", expr[:at]
	if strings.HasPrefix(head, "(?i)") {
		flags, head = "(?i)", head[len("(?i)"):]
	}
	if !strings.HasPrefix(head, assignPrefix) || !strings.HasSuffix(head, ")") {
		return nil
	}
	ident, err := syntax.Parse(flags+"(?:"+head[len(assignPrefix):], syntax.Perl)
	if err != nil {
		return nil
	}
	names, ok := finiteLower(ident, 256)
	if !ok {
		return nil
	}
	for _, n := range names {
		if !endsWithAny(n, keywords) {
			return nil
		}
	}
	rest := expr[at+len(assignInfix):]
	if !strings.HasPrefix(rest, "(") || strings.HasPrefix(rest, "(?") {
		return nil
	}
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	group := findCapture(re, capturesIn(expr[:at])+1)
	if group == nil {
		return nil
	}
	a := &assignShape{minValue: minRunes(group)}
	markBytes(group, &a.value)
	if a.minValue < 1 {
		return nil
	}
	return a
}

// allows reports whether the regex could match through a keyword
// occurrence ending at stop.
func (a *assignShape) allows(text string, stop int) bool {
	op := -1
	for i := stop; i < len(text) && i <= stop+maxBeforeOp; i++ {
		c := text[i]
		if c >= utf8Self {
			return true
		}
		if opByte(c) {
			op = i
			break
		}
		if !nameTailByte(c) {
			return false
		}
	}
	if op < 0 {
		return false
	}
	for v := op + 1; v < len(text) && v <= op+maxOpToValue; v++ {
		n := 0
		for j := v; j < len(text) && n < a.minValue; j++ {
			c := text[j]
			if c >= utf8Self {
				return true
			}
			if !a.value[c] {
				break
			}
			n++
		}
		if n >= a.minValue {
			return true
		}
	}
	return false
}

// utf8Self is the first byte that is not a whole ASCII character.
const utf8Self = 0x80

// opByte is a byte an assignment operator of the infix starts with.
func opByte(c byte) bool {
	switch c {
	case '=', '>', ':', '|', '?', ',':
		return true
	}
	return false
}

// nameTailByte is a byte the infix allows before the operator: [ \t\w.-]
// and [\s'"].
func nameTailByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		strings.IndexByte("_.- \t\n\r\f\v'\"", c) >= 0
}

func endsWithAny(s string, suffixes []string) bool {
	for _, k := range suffixes {
		if k != "" && strings.HasSuffix(s, strings.ToLower(k)) {
			return true
		}
	}
	return false
}

// finiteLower lists, lower-cased, the strings re matches, when they are
// at most limit and re is a plain alternation of words.
func finiteLower(re *syntax.Regexp, limit int) ([]string, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpLiteral:
		return []string{strings.ToLower(string(re.Rune))}, true
	case syntax.OpCharClass:
		var out []string
		seen := map[string]bool{}
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i+1]-re.Rune[i] > 64 {
				return nil, false
			}
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if s := strings.ToLower(string(r)); !seen[s] {
					seen[s] = true
					out = append(out, s)
				}
			}
		}
		return out, len(out) <= limit
	case syntax.OpCapture:
		return finiteLower(re.Sub[0], limit)
	case syntax.OpQuest:
		sub, ok := finiteLower(re.Sub[0], limit)
		return append(sub, ""), ok && len(sub) < limit
	case syntax.OpAlternate:
		var out []string
		for _, s := range re.Sub {
			sub, ok := finiteLower(s, limit)
			if !ok || len(out)+len(sub) > limit {
				return nil, false
			}
			out = append(out, sub...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, s := range re.Sub {
			sub, ok := finiteLower(s, limit)
			if !ok || len(out)*len(sub) > limit {
				return nil, false
			}
			next := make([]string, 0, len(out)*len(sub))
			for _, a := range out {
				for _, b := range sub {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

// capturesIn counts the capturing groups opened in a regular expression's
// source text.
func capturesIn(expr string) int {
	n, inClass := 0, false
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; {
		case c == '\\':
			i++
		case inClass:
			inClass = c != ']'
		case c == '[':
			inClass = true
			if i+1 < len(expr) && expr[i+1] == ']' {
				i++ // a ] first in a class is a member
			}
		case c == '(' && (i+1 >= len(expr) || expr[i+1] != '?'):
			n++
		}
	}
	return n
}

func findCapture(re *syntax.Regexp, n int) *syntax.Regexp {
	if re.Op == syntax.OpCapture && re.Cap == n {
		return re
	}
	for _, s := range re.Sub {
		if f := findCapture(s, n); f != nil {
			return f
		}
	}
	return nil
}

// minRunes is the fewest characters re can match.
func minRunes(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		return len(re.Rune)
	case syntax.OpCharClass, syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return 1
	case syntax.OpCapture, syntax.OpPlus:
		return minRunes(re.Sub[0])
	case syntax.OpRepeat:
		return re.Min * minRunes(re.Sub[0])
	case syntax.OpConcat:
		n := 0
		for _, s := range re.Sub {
			n += minRunes(s)
		}
		return n
	case syntax.OpAlternate:
		n := -1
		for _, s := range re.Sub {
			if m := minRunes(s); n < 0 || m < n {
				n = m
			}
		}
		return max(n, 0)
	}
	return 0 // star, quest, anchors, the empty match
}

// markBytes sets every ASCII byte re can match anywhere.
func markBytes(re *syntax.Regexp, set *[256]bool) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			for f := r; ; {
				if f < utf8Self {
					set[f] = true
				}
				if f = unicode.SimpleFold(f); f == r {
					break
				}
			}
		}
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1] && r < utf8Self; r++ {
				set[r] = true
			}
		}
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		for c := range utf8Self {
			set[c] = c != '\n' || re.Op == syntax.OpAnyChar
		}
	}
	for _, s := range re.Sub {
		markBytes(s, set)
	}
}
