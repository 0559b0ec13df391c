package money

import (
	"fmt"
	"strings"
)

// MaxPricePico bounds a price per token an admin writes, in picodollars:
// $1,000 per million tokens, under any model's price and the ledger's
// own bound on a price.
const MaxPricePico = 1_000_000_000

// Units of a price per million tokens, as the decimals that make it
// picodollars per token: $1 per million tokens is 10^6 picodollars per
// token, one cent per million 10^4.
const (
	DollarsPerMillion = 6
	CentsPerMillion   = 4
)

// ParsePerMillion reads a price per million tokens in unit (a plain
// decimal, "0.15" or "3"; DollarsPerMillion or CentsPerMillion) as
// picodollars per token. It refuses what is not a plain decimal, a
// fraction of a picodollar per token and a price past MaxPricePico; a
// leading "$" only in dollars.
func ParsePerMillion(s string, unit int) (int64, error) {
	name := "US dollars"
	if unit == CentsPerMillion {
		name = "cents"
	}
	v := s
	if unit != CentsPerMillion {
		// A "$" is dollars: read as cents it would be 100 times less.
		v = strings.TrimPrefix(s, "$")
	}
	whole, frac, dot := strings.Cut(v, ".")
	if whole == "" && (!dot || frac == "") || (whole != "" && !isDigits(whole)) || (frac != "" && !isDigits(frac)) {
		return 0, fmt.Errorf("%q is not a price in %s per million tokens, e.g. 0.15 or 3", s, name)
	}
	if t := strings.TrimRight(frac, "0"); len(t) > unit {
		return 0, fmt.Errorf("%q has more decimals than a picodollar per token (%d)", s, unit)
	}
	frac = (frac + strings.Repeat("0", unit))[:unit]
	whole = strings.TrimLeft(whole, "0")
	over := fmt.Errorf("%q is over the largest price bound, $%d per million tokens", s, MaxPricePico/1_000_000)
	if len(whole)+unit > 10 {
		return 0, over
	}
	var n int64
	for _, c := range whole + frac {
		n = n*10 + int64(c-'0')
	}
	if n > MaxPricePico {
		return 0, over
	}
	return n, nil
}

// FormatPerMillion shows a price per token in picodollars as a plain
// decimal per million tokens in unit, "0.15"; ParsePerMillion reads it
// back.
func FormatPerMillion(pico int64, unit int) string {
	scale := int64(1)
	for range unit {
		scale *= 10
	}
	s := fmt.Sprintf("%d.%0*d", pico/scale, unit, pico%scale)
	return strings.TrimSuffix(strings.TrimRight(s, "0"), ".")
}

// PerMillion shows a price per token in picodollars as US dollars per
// million tokens, "$0.15", for messages.
func PerMillion(pico int64) string { return "$" + FormatPerMillion(pico, DollarsPerMillion) }
