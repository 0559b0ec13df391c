package modellist

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// count reads a whole number in [0, max].
func (p *parser) count(n *yaml.Node, w where, max int64) (int64, bool) {
	s, ok := p.scalar(n, w)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(strings.TrimPrefix(s, "+"), 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		p.errorf(deref(n), w, "is too large; the most is %d", max)
	case err != nil:
		p.errorf(deref(n), w, "must be a whole number, e.g. 3")
	case v < 0:
		p.errorf(deref(n), w, "must be 0 or more")
	case v > max:
		p.errorf(deref(n), w, "is too large; the most is %d", max)
	default:
		return v, true
	}
	return 0, false
}

// maxSeconds keeps a duration given in seconds inside time.Duration.
const maxSeconds = float64(math.MaxInt64/int64(time.Second)) - 1

// duration reads seconds (30, 1.5) or a Go duration string ("30s", "2m").
// Zero is accepted only where it means something (allowZero); elsewhere the
// fix is to remove the field.
func (p *parser) duration(n *yaml.Node, w where, allowZero bool) (time.Duration, bool) {
	s, ok := p.scalar(n, w)
	if !ok {
		return 0, false
	}
	n = deref(n)
	var d time.Duration
	if isDecimalText(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f > maxSeconds || f < -maxSeconds {
			p.errorf(n, w, "is out of range; give seconds (30) or a duration (\"30s\", \"10m\")")
			return 0, false
		}
		d = time.Duration(math.Round(f * float64(time.Second)))
		if d == 0 && f != 0 {
			p.errorf(n, w, "is shorter than a nanosecond; give seconds (30) or a duration (\"30s\")")
			return 0, false
		}
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			p.errorf(n, w, "must be seconds (30) or a Go duration (\"30s\", \"1m30s\")")
			return 0, false
		}
	}
	switch {
	case d < 0:
		p.errorf(n, w, "must not be negative")
		return 0, false
	case d == 0 && !allowZero:
		p.errorf(n, w, "must be more than 0; remove the field to leave it unset")
		return 0, false
	}
	return d, true
}

// isDecimalText accepts what strconv.ParseFloat should see: digits, one
// sign, a point and an exponent, but not inf, nan, hex or underscores.
func isDecimalText(s string) bool {
	if s == "" {
		return false
	}
	digits := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits = true
		case c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-':
		default:
			return false
		}
	}
	return digits
}

func (p *parser) weight(n *yaml.Node, w where) (float64, bool) {
	s, ok := p.scalar(n, w)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || !isDecimalText(s) || f <= 0 || math.IsInf(f, 0) {
		p.errorf(deref(n), w, "must be a number above 0, e.g. 1 or 2.5 (traffic is split in proportion to weight)")
		return 0, false
	}
	return f, true
}

// price reads a USD-per-token price into picodollars. nil on error.
func (p *parser) price(n *yaml.Node, w where) *int64 {
	s, ok := p.scalar(n, w)
	if !ok {
		return nil
	}
	v, err := parsePicodollars(s)
	if err != nil {
		p.errorf(deref(n), w, "%v", err)
		return nil
	}
	// The ledger's bound (ledger.MaxPrice, $1,073.74 per million tokens):
	// a larger figure is almost always a per-million price in the wrong
	// field, which would bill every token a million times over.
	if v > 1<<30 {
		p.errorf(deref(n), w, "%s USD per token is above $0.001; prices are per token, not per million tokens (e.g. $3 per million is 0.000003 or 3e-06)", s)
		return nil
	}
	return &v
}

// parsePicodollars converts a decimal USD amount ("0.000003", "3e-06",
// "1.25e-7") to picodollars exactly, working on the digits rather than a
// float so that 3e-06 is 3_000_000 and not 2_999_999.
func parsePicodollars(s string) (int64, error) {
	const usage = "must be a price in USD per token, e.g. 0.000003 or 3e-06"
	t := s
	neg := false
	if t != "" && (t[0] == '+' || t[0] == '-') {
		neg = t[0] == '-'
		t = t[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(t), "e")
	whole, frac, _ := strings.Cut(mant, ".")
	if whole+frac == "" || !allDigits(whole) || !allDigits(frac) {
		return 0, errors.New(usage)
	}
	exp := 0
	if hasExp {
		e, err := strconv.Atoi(expText)
		if err != nil || expText == "" || expText[0] == ' ' {
			return 0, errors.New(usage)
		}
		if e > 1000 || e < -1000 {
			return 0, errors.New("is out of range; " + usage)
		}
		exp = e
	}
	digits := strings.TrimLeft(whole+frac, "0")
	if digits == "" {
		return 0, nil
	}
	if neg {
		return 0, errors.New("must not be negative")
	}
	// value = digits × 10^(exp − len(frac)) USD = digits × 10^shift picodollars.
	shift := exp - len(frac) + 12
	for shift < 0 && strings.HasSuffix(digits, "0") {
		digits = digits[:len(digits)-1]
		shift++
	}
	if shift < 0 {
		return 0, errors.New("is finer than 1 picodollar (1e-12 USD) per token; round it")
	}
	if len(digits)+shift > 19 {
		return 0, errors.New("is too large for a per-token price")
	}
	v, err := strconv.ParseInt(digits+strings.Repeat("0", shift), 10, 64)
	if err != nil {
		return 0, errors.New("is too large for a per-token price")
	}
	return v, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
