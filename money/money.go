// Package money is US dollars as the gateway counts them: budgets in
// whole cents, costs in integer picodollars (10^-12 USD, so a per-token
// price is exact), and the text an admin writes and reads. It imports
// nothing of the gateway, so a command-line tool can parse an amount
// without linking the ledger's databases.
package money

import (
	"fmt"
	"strconv"
	"strings"
)

// PicoPerCent is the picodollars in one cent.
const PicoPerCent = 10_000_000_000

// MaxBudgetCents bounds every budget amount: $1,000,000 per period. A
// budget is compared in picodollars (cents × PicoPerCent), and spend past
// it by in-flight requests is summed on top, so the bound keeps every
// such sum nine times inside an int64. A team that wants more sets no
// budget.
const MaxBudgetCents = 100_000_000

// ParseDollars reads a budget amount in US dollars, "50", "2.50" or
// "$0.05", as cents. It refuses what is not a plain decimal (NaN, Inf,
// exponents, signs), a fraction of a cent (a budget is kept in whole
// cents, and rounding would change what the admin wrote) and an amount
// past MaxBudgetCents. Zero is an amount: a budget of nothing.
func ParseDollars(s string) (int64, error) {
	s = strings.TrimPrefix(s, "$")
	whole, frac, dot := strings.Cut(s, ".")
	if whole == "" && (!dot || frac == "") || (whole != "" && !isDigits(whole)) || (frac != "" && !isDigits(frac)) {
		return 0, fmt.Errorf("%q is not an amount in US dollars, e.g. 50 or 2.50", s)
	}
	if t := strings.TrimRight(frac, "0"); len(t) > 2 {
		return 0, fmt.Errorf("%q is a fraction of a cent; budgets are kept in whole cents", s)
	}
	frac = (frac + "00")[:2]
	whole = strings.TrimLeft(whole, "0")
	if len(whole) > 7 {
		return 0, fmt.Errorf("%q is over the largest budget, $%d", s, MaxBudgetCents/100)
	}
	var n int64
	for _, c := range whole + frac {
		n = n*10 + int64(c-'0')
	}
	if n > MaxBudgetCents {
		return 0, fmt.Errorf("%q is over the largest budget, $%d", s, MaxBudgetCents/100)
	}
	return n, nil
}

// ParseCents reads a budget amount the admin API writes, a whole number
// of cents as a decimal string, e.g. "5000", from 0 to MaxBudgetCents.
func ParseCents(s string) (int64, error) {
	if !isDigits(s) {
		return 0, fmt.Errorf("%q is not a whole number of cents, e.g. \"5000\" for $50", s)
	}
	if t := strings.TrimLeft(s, "0"); len(t) > 9 {
		return 0, fmt.Errorf("%q cents is over the largest budget, %d cents ($%d)", s, MaxBudgetCents, MaxBudgetCents/100)
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	if n > MaxBudgetCents {
		return 0, fmt.Errorf("%q cents is over the largest budget, %d cents ($%d)", s, MaxBudgetCents, MaxBudgetCents/100)
	}
	return n, nil
}

// Dollars shows cents as an admin writes them, "$12.34"; ParseDollars
// reads it back. A negative amount shows its sign first, "-$0.05".
func Dollars(cents int64) string {
	sign := ""
	if cents < 0 {
		sign = "-"
	}
	// Each part negated on its own: -MinInt64 would overflow.
	whole, frac := cents/100, cents%100
	if cents < 0 {
		whole, frac = -whole, -frac
	}
	return fmt.Sprintf("%s$%d.%02d", sign, whole, frac)
}

// isDigits reports whether s is one or more ASCII digits.
func isDigits(s string) bool { return s != "" && strings.Trim(s, "0123456789") == "" }
