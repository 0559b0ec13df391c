// Package secretscan finds credentials in the text a request carries to a
// model, and in the text a model writes back, and replaces them with
// placeholders. It knows nothing of HTTP: callers hand it a client format's
// body bytes (or a stream's text deltas) and act on what it returns.
//
// The rules are gitleaks' maintained default rule set (rules_gitleaks.toml,
// copied unchanged from github.com/zricethezav/gitleaks/v8's config package,
// MIT, LICENSE.gitleaks beside it), read with the TOML decoder the module
// already has and matched the way gitleaks matches them: a keyword prefilter
// (Aho-Corasick), the rule's regular expression, its secret group, its
// entropy floor and its allowlists. Two generic checks of this package's own
// cover what the rule set leaves out: a high-entropy token and a password in
// a URL's user information.
package secretscan

import (
	_ "embed"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	ahocorasick "github.com/BobuSumisu/aho-corasick"
	"github.com/BurntSushi/toml"
)

// GitleaksVersion is the gitleaks release rules_gitleaks.toml was copied
// from; scripts/update-secret-rules.sh replaces both.
const GitleaksVersion = "v8.30.1"

//go:embed rules_gitleaks.toml
var gitleaksRules string

// tomlAllowlist is one [[rules.allowlists]] or the global [allowlist] as
// gitleaks writes them.
type tomlAllowlist struct {
	Condition   string
	Commits     []string
	Paths       []string
	RegexTarget string `toml:"regexTarget"`
	Regexes     []string
	StopWords   []string `toml:"stopwords"`
}

type tomlRule struct {
	ID          string
	Regex       string
	Path        string
	SecretGroup int `toml:"secretGroup"`
	Entropy     float64
	Keywords    []string
	Allowlists  []tomlAllowlist
}

type tomlConfig struct {
	Allowlist tomlAllowlist
	Rules     []tomlRule
}

// allowlist is the part of a gitleaks allowlist that applies to text with
// no file path or commit: its regular expressions and stop words.
type allowlist struct {
	target    string // "", "match" or "line": what the regexes test
	regexes   []*regexp.Regexp
	stopWords []string // lower case
}

type rule struct {
	id string
	re *regexp.Regexp
	// span is the longest match the regular expression can make, in
	// bytes, or -1 when it is unbounded (or too long to be worth a
	// window): a rule runs only around its keywords' occurrences, in
	// windows that reach span bytes either side.
	span    int
	group   int
	entropy float64
	allow   []allowlist
	// assign, for a semi-generic rule, is the shape a keyword occurrence
	// must be followed by before the regex runs around it.
	assign *assignShape
	// follow, for a rule that starts with a keyword, is the run the
	// keyword must be followed by (see follow.go).
	follow *followShape
	// needs are literals every match contains (see literals.go).
	needs []neededBytes
}

// Rules is the compiled rule set: built once (at provision) and shared by
// every request; read-only after Compile.
type Rules struct {
	rules     []rule
	global    allowlist
	trie      *ahocorasick.Trie
	byKeyword [][]int // pattern index → rules that keyword turns on
	always    []int   // rules with no keyword, run on every text
	urlCreds  *regexp.Regexp
	scratches sync.Pool // *scratch, one per scan in progress
	// clean remembers long texts with no hit (clean.go); nil: none.
	clean *cleanTexts
}

// Compile reads the embedded gitleaks rule set.
func Compile() (*Rules, error) { return compileTOML(gitleaksRules) }

func compileTOML(src string) (*Rules, error) {
	var c tomlConfig
	if _, err := toml.Decode(src, &c); err != nil {
		return nil, fmt.Errorf("secretscan: reading the gitleaks rules: %w", err)
	}
	rs := &Rules{urlCreds: regexp.MustCompile(urlCredsPattern), clean: newCleanTexts()}
	global, ok, err := compileAllowlist(c.Allowlist)
	if err != nil {
		return nil, fmt.Errorf("secretscan: global allowlist: %w", err)
	}
	if ok {
		rs.global = global
	}
	kwIndex := map[string]int{} // keyword → its pattern index in the trie
	var keywords []string
	for _, tr := range c.Rules {
		if tr.Regex == "" {
			continue // a path-only rule (pkcs12-file): nothing to match in text
		}
		re, err := regexp.Compile(tr.Regex)
		if err != nil {
			return nil, fmt.Errorf("secretscan: rule %s: %w", tr.ID, err)
		}
		r := rule{id: tr.ID, re: re, span: spanOf(tr.Regex), group: tr.SecretGroup, entropy: tr.Entropy,
			assign: compileAssign(tr.Regex, tr.Keywords), needs: neededOf(tr.Regex),
			follow: compileFollow(tr.Regex, tr.Keywords)}
		for _, a := range tr.Allowlists {
			al, ok, err := compileAllowlist(a)
			if err != nil {
				return nil, fmt.Errorf("secretscan: rule %s allowlist: %w", tr.ID, err)
			}
			if ok {
				r.allow = append(r.allow, al)
			}
		}
		i := len(rs.rules)
		rs.rules = append(rs.rules, r)
		if len(tr.Keywords) == 0 {
			rs.always = append(rs.always, i)
			continue
		}
		for _, k := range tr.Keywords {
			k = strings.ToLower(k)
			p, seen := kwIndex[k]
			if !seen {
				p = len(keywords)
				kwIndex[k] = p
				keywords = append(keywords, k)
				rs.byKeyword = append(rs.byKeyword, nil)
			}
			rs.byKeyword[p] = append(rs.byKeyword[p], i)
		}
	}
	rs.trie = ahocorasick.NewTrieBuilder().AddStrings(keywords).Build()
	return rs, nil
}

// compileAllowlist keeps what can apply to text; ok is false for an
// allowlist that could only ever match a path or a commit.
func compileAllowlist(a tomlAllowlist) (allowlist, bool, error) {
	and := strings.EqualFold(a.Condition, "and") || a.Condition == "&&"
	if and && (len(a.Paths) > 0 || len(a.Commits) > 0) {
		return allowlist{}, false, nil
	}
	al := allowlist{target: a.RegexTarget}
	if al.target == "secret" {
		al.target = ""
	}
	for _, s := range a.Regexes {
		re, err := regexp.Compile(s)
		if err != nil {
			return allowlist{}, false, err
		}
		al.regexes = append(al.regexes, re)
	}
	for _, w := range a.StopWords {
		al.stopWords = append(al.stopWords, strings.ToLower(w))
	}
	return al, len(al.regexes) > 0 || len(al.stopWords) > 0, nil
}

// Count is how many rules of the gitleaks set apply to text.
func (rs *Rules) Count() int { return len(rs.rules) }

// IDs lists the rule ids, for documentation and tests.
func (rs *Rules) IDs() []string {
	ids := make([]string, len(rs.rules))
	for i, r := range rs.rules {
		ids[i] = r.id
	}
	return ids
}

// allows says whether a lets the finding go; a line allowlist's regexes
// judge only a whole line (lineWhole), never one cut short.
func (a *allowlist) allows(secret, match, line string, lineWhole bool) bool {
	target := secret
	switch a.target {
	case "match":
		target = match
	case "line":
		target = line
	}
	for _, re := range a.regexes {
		if a.target == "line" && !lineWhole {
			break
		}
		if re.MatchString(target) {
			return true
		}
	}
	if len(a.stopWords) > 0 {
		low := strings.ToLower(secret)
		for _, w := range a.stopWords {
			if strings.Contains(low, w) {
				return true
			}
		}
	}
	return false
}

// shannon is the entropy in bits per byte, as gitleaks computes it (over
// runes; secrets are ASCII).
func shannon(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	n := 0
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
		n++
	}
	inv := 1 / float64(n)
	e := 0.0
	for _, c := range counts {
		if c > 0 {
			f := float64(c) * inv
			e -= f * math.Log2(f)
		}
	}
	return e
}

// maxWindowSpan bounds the windows: a rule whose matches may be longer
// runs over the whole text (private keys, whose keyword is rare).
const maxWindowSpan = 4096

func spanOf(expr string) int {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return -1
	}
	if n := maxMatch(re); n <= maxWindowSpan {
		return n
	}
	return -1
}

// unboundedReps is how many times a repetition with no upper bound is
// counted: a match that long is data, not a key, and a window cut there
// ends in $, which the rules' delimiters accept, so the text is still
// caught.
const unboundedReps = 1024

// maxMatch is the most bytes re can match, an unbounded repetition
// counted unboundedReps times.
func maxMatch(re *syntax.Regexp) int {
	switch re.Op {
	case syntax.OpLiteral:
		n := 0
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				n += utf8.UTFMax // K also matches the Kelvin sign
			} else {
				n += utf8.RuneLen(r)
			}
		}
		return n
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return 0
		}
		return max(utf8.RuneLen(re.Rune[len(re.Rune)-1]), 1)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		return utf8.UTFMax
	case syntax.OpCapture, syntax.OpQuest:
		return maxMatch(re.Sub[0])
	case syntax.OpStar, syntax.OpPlus:
		return maxMatch(re.Sub[0]) * unboundedReps
	case syntax.OpRepeat:
		reps := re.Max
		if reps < 0 {
			reps = max(re.Min, unboundedReps)
		}
		return maxMatch(re.Sub[0]) * reps
	case syntax.OpConcat, syntax.OpAlternate:
		n := 0
		for _, sub := range re.Sub {
			if m := maxMatch(sub); re.Op == syntax.OpConcat {
				n += m
			} else {
				n = max(n, m)
			}
		}
		return n
	}
	return 0 // empty-width: anchors, boundaries, the empty match
}
