package secretscan

import (
	"math"
	"strings"
)

// The generic checks' rule ids.
const (
	RuleHighEntropy = "high-entropy-token"
	RuleURLPassword = "url-password"
)

// A token for the entropy check is a run of the characters API keys and
// base64 are made of. Longer runs are data (an image, a bundle), not a key.
const (
	minToken = 24
	maxToken = 512
)

func tokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '+' || c == '/' || c == '='
}

// appendGeneric adds the hits of this package's own two checks.
func (rs *Rules) appendGeneric(hits []Hit, text string) []Hit {
	for i := 0; i < len(text); {
		if !tokenByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && tokenByte(text[j]) {
			j++
		}
		if n := j - i; n >= minToken && n <= maxToken && randomLooking(text[i:j]) {
			hits = append(hits, Hit{Rule: RuleHighEntropy, Start: i, End: j})
		}
		i = j
	}
	if strings.Contains(text, "://") {
		for _, m := range rs.urlCreds.FindAllStringSubmatchIndex(text, -1) {
			if pw := text[m[4]:m[5]]; !placeholderPassword(pw) {
				hits = append(hits, Hit{Rule: RuleURLPassword, Start: m[4], End: m[5]})
			}
		}
	}
	return hits
}

// randomLooking tells a generated token from an identifier, a path or a
// word: all three character classes, at least two digits, a class change
// at least every third character on average (CamelCase changes once a
// word) and entropy near the most its length allows.
func randomLooking(t string) bool {
	var upper, lower, digit, runs int
	prev := -1
	for i := 0; i < len(t); i++ {
		c := t[i]
		class := 3
		switch {
		case 'A' <= c && c <= 'Z':
			upper++
			class = 0
		case 'a' <= c && c <= 'z':
			lower++
			class = 1
		case '0' <= c && c <= '9':
			digit++
			class = 2
		}
		if class != prev {
			runs++
			prev = class
		}
	}
	if upper == 0 || lower == 0 || digit < 2 {
		return false
	}
	if float64(runs) < 0.35*float64(len(t)) {
		return false
	}
	return shannon(t) >= 0.8*math.Log2(math.Min(float64(len(t)), 64))
}

// urlCredsPattern finds scheme://user:password@host; group 2 is the
// password.
const urlCredsPattern = `(?i)\b[a-z][a-z0-9+.\-]{1,30}://([^\s:@/?#"'<>\\]+):([^\s@/?#"'<>\\]+)@[^\s/?#"'<>\\]+`

// placeholderPassword is a password written as a stand-in: a template
// variable, a mask or the word itself.
func placeholderPassword(pw string) bool {
	if len(pw) < 3 {
		return true
	}
	switch pw[0] {
	case '$', '{', '%', '<', '[':
		return true
	}
	if strings.Trim(pw, "*xX.") == "" {
		return true
	}
	switch strings.ToLower(pw) {
	case "password", "passwd", "pass", "pwd", "secret", "changeme", "changeit":
		return true
	}
	return false
}
