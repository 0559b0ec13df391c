package secretscan

import "regexp/syntax"

// followShape is a keyword-prefixed rule's necessary condition (vault's
// "s." and "hvs.", twilio's "SK", github's "ghp_"…): its regex starts
// with a literal that ends in one of its keywords and goes on with a run
// of characters of known kinds, so a keyword occurrence not followed by
// such a run ("s.lower" in any Go file) cannot be part of a match.
type followShape struct {
	alts []followRun // one per alternative of the regex's start
}

type followRun struct {
	min   int
	class [256]bool // ASCII bytes the run can contain
}

// compileFollow returns the rule's shape, or nil when its regex does not
// start that way in every alternative.
func compileFollow(expr string, keywords []string) *followShape {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	var rest []*syntax.Regexp
	for {
		switch re.Op {
		case syntax.OpCapture:
			re = re.Sub[0]
			continue
		case syntax.OpConcat:
			subs := re.Sub
			for len(subs) > 0 && emptyWidth(subs[0].Op) {
				subs = subs[1:]
			}
			if len(subs) == 0 {
				return nil
			}
			re, rest = subs[0], append(append([]*syntax.Regexp(nil), subs[1:]...), rest...)
			continue
		}
		break
	}
	branches := []*syntax.Regexp{re}
	if re.Op == syntax.OpAlternate {
		branches = re.Sub
	}
	f := &followShape{}
	for _, b := range branches {
		seq := []*syntax.Regexp{b}
		if b.Op == syntax.OpConcat {
			seq = b.Sub
		}
		seq = append(append([]*syntax.Regexp(nil), seq...), rest...)
		if len(seq) < 2 || seq[0].Op != syntax.OpLiteral {
			return nil
		}
		lit, next := seq[0], seq[1]
		names, ok := finiteLower(lit, 1)
		if !ok || !endsWithAny(names[0], keywords) {
			return nil
		}
		run := followRun{min: minRunes(next)}
		if run.min < 1 {
			return nil
		}
		markBytes(next, &run.class)
		f.alts = append(f.alts, run)
	}
	return f
}

func emptyWidth(op syntax.Op) bool {
	switch op {
	case syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpBeginLine, syntax.OpBeginText, syntax.OpEmptyMatch:
		return true
	}
	return false
}

// allows reports whether a run one alternative needs starts at stop, the
// end of a keyword occurrence.
func (f *followShape) allows(text string, stop int) bool {
	for i := range f.alts {
		a := &f.alts[i]
		n := 0
		for j := stop; j < len(text) && n < a.min; j++ {
			c := text[j]
			if c >= utf8Self {
				return true // (?i) folds some non-ASCII letters into ASCII classes
			}
			if !a.class[c] {
				break
			}
			n++
		}
		if n >= a.min {
			return true
		}
	}
	return false
}
