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
	minToken = 32
	maxToken = 512
)

// tokenLow and tokenHigh are tokenByte's set as bit masks over bytes
// 0–63 and 64–127: [0-9+/-] and [A-Za-z_]. The check runs on every byte
// of every text, and one shift beats eight comparisons.
const (
	tokenLow  = 0x3ffa80000000000
	tokenHigh = 0x7fffffe87fffffe
)

func tokenByte(c byte) bool {
	switch {
	case c < 64:
		return tokenLow>>c&1 != 0
	case c < 128:
		return tokenHigh>>(c-64)&1 != 0
	}
	return false
}

// appendGeneric adds the hits of this package's own checks.
func (rs *Rules) appendGeneric(hits []Hit, text string, s *scratch) []Hit {
	for i := 0; i < len(text); {
		if !tokenByte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && tokenByte(text[j]) {
			j++
		}
		if !s.noHex && j-i >= minHexRun {
			hits = rs.appendHex(hits, text, i, j, s)
		}
		// base64 padding ends a token; an = inside one is an assignment
		// (NAME=value), whose name is not part of the secret.
		for k := 0; k < 2 && j < len(text) && text[j] == '='; k++ {
			j++
		}
		if n := j - i; n >= minToken && n <= maxToken && randomLooking(text[i:j]) {
			hits = append(hits, Hit{Rule: RuleHighEntropy, Start: i, End: j})
		}
		i = j
	}
	// A URL with a password is looked for only on the lines that hold a
	// "://" with an "@" after it, each line once.
	done := 0
	for from := 0; ; {
		i := strings.Index(text[from:], "://")
		if i < 0 {
			break
		}
		i += from
		from = i + 3
		lo, hi := lineWindow(text, i, i+3, maxURLWindow)
		lo = max(lo, done)
		if lo >= hi || strings.IndexByte(text[i:hi], '@') < 0 {
			continue
		}
		done = hi
		for _, m := range rs.urlCreds.FindAllStringSubmatchIndex(text[lo:hi], -1) {
			if pw := text[lo+m[4] : lo+m[5]]; !placeholderPassword(pw) {
				hits = append(hits, Hit{Rule: RuleURLPassword, Start: lo + m[4], End: lo + m[5]})
			}
		}
	}
	return hits
}

// maxURLWindow bounds the text read around a "://" for a URL's user
// information.
const maxURLWindow = 512

// randomLooking tells a generated token from an identifier, a path or a
// word: all three character classes, at least two digits, little of it in
// runs of four or more of one class (words are such runs: 45% of
// OpAMD64LoweredGetClosurePtr, 5% of random base62 tokens reach 40%) and
// entropy near the most its length allows.
func randomLooking(t string) bool {
	var upper, lower, digit, inLong, run int
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
		if class == prev && class != 3 {
			run++
		} else {
			if run >= 4 {
				inLong += run
			}
			run = 1
			prev = class
		}
	}
	if run >= 4 && prev != 3 {
		inLong += run
	}
	if upper == 0 || lower == 0 || digit < 2 {
		return false
	}
	if float64(inLong) >= 0.4*float64(len(t)) {
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
