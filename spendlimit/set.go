// Package spendlimit resolves which spend limits apply to a caller: the
// organization's, their groups' pools, their own (set for them, else their
// group's per-member default), their key's. It takes plain values (a
// person, their groups, a key) and the limits stored in the ledger, and
// knows nothing of requests; policy.Budgets admits a request only within
// every limit it returns, with the reservations it already makes for a
// key's and a workspace's budgets.
package spendlimit

import (
	"strings"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// Periods are the periods a spend limit can have, as Anthropic's.
func Periods() [3]string { return [3]string{"daily", "weekly", "monthly"} }

// Set is every spend limit in force, indexed for admission. Immutable.
type Set struct {
	all []ledger.SpendLimit
	// by scope, then scope id, then period.
	by map[string]map[string]map[string]*ledger.SpendLimit
}

// NewSet indexes ls.
func NewSet(ls []ledger.SpendLimit) *Set {
	s := &Set{all: ls, by: map[string]map[string]map[string]*ledger.SpendLimit{}}
	for i := range ls {
		l := &ls[i]
		ids := s.by[l.Scope]
		if ids == nil {
			ids = map[string]map[string]*ledger.SpendLimit{}
			s.by[l.Scope] = ids
		}
		if ids[l.ScopeID] == nil {
			ids[l.ScopeID] = map[string]*ledger.SpendLimit{}
		}
		ids[l.ScopeID][l.Period] = l
	}
	return s
}

// All is every limit, oldest first.
func (s *Set) All() []ledger.SpendLimit {
	if s == nil {
		return nil
	}
	return s.all
}

// Empty reports a set with no limit.
func (s *Set) Empty() bool { return s == nil || len(s.all) == 0 }

func (s *Set) find(scope, id, period string) *ledger.SpendLimit {
	return s.by[scope][id][period]
}

// Caller is who a request is charged to.
type Caller struct {
	Person string // "" for a key of no one
	Groups string // the person's matched groups in rule order, one per line
	KeyID  string
	// Session is the request's session id ("" for none, and in reports).
	Session string
	// Default is the per-person budget the person's group rule sets in
	// the Caddyfile; limits set through the API come first.
	Default *ledger.PersonBudget
}

// Applied is one limit that applies to a caller.
type Applied struct {
	// Scope and ScopeID name the spend the limit counts (ledger's
	// ScopeOrganization, ScopeUser, ScopeGroup or ScopeKey).
	Scope, ScopeID, Period string
	Cents                  int64
	SoftCents              int64
	// Source is where the limit was set: its scope (ScopeGroup for a
	// member's default, ScopeGroupPool for a pool) and id; LimitID is ""
	// for the Caddyfile's group budget.
	SourceScope, SourceID, LimitID string
	Downgrade                      string
	// Bound lets Downgrade be a priced alias within it; nil: only a free
	// one (a pointer into the immutable set, so admission copies less).
	Bound *ledger.DowngradeBound
}

func applied(scope, id string, l *ledger.SpendLimit) Applied {
	return Applied{Scope: scope, ScopeID: id, Period: l.Period, Cents: min(max(*l.AmountCents, 0), money.MaxBudgetCents),
		SourceScope: l.Scope, SourceID: l.ScopeID, LimitID: l.ID, Downgrade: l.Downgrade, Bound: &l.Bound}
}

// Append appends to dst every limit that applies to c.
func (s *Set) Append(dst []Applied, c Caller) []Applied {
	for _, period := range Periods() {
		if s != nil {
			if l := s.find(ledger.ScopeOrganization, ledger.OrganizationID, period); l != nil && l.AmountCents != nil {
				dst = append(dst, applied(ledger.ScopeOrganization, ledger.OrganizationID, l))
			}
			for rest := c.Groups; rest != ""; {
				var g string
				g, rest, _ = strings.Cut(rest, "\n")
				if l := s.find(ledger.ScopeGroupPool, g, period); l != nil && l.AmountCents != nil {
					dst = append(dst, applied(ledger.ScopeGroup, g, l))
				}
			}
			if c.KeyID != "" {
				if l := s.find(ledger.ScopeKey, c.KeyID, period); l != nil && l.AmountCents != nil {
					dst = append(dst, applied(ledger.ScopeKey, c.KeyID, l))
				}
			}
		}
		if a, ok := s.Person(c, period); ok {
			dst = append(dst, a)
		}
	}
	if a, ok := s.Session(c); ok {
		dst = append(dst, a)
	}
	if d := c.Default; c.Person != "" && d != nil && (d.Period == "total" || d.Period == "") {
		dst = append(dst, Applied{Scope: ledger.ScopeUser, ScopeID: c.Person, Period: "total", Cents: min(max(d.Cents, 0), money.MaxBudgetCents),
			SoftCents: d.SoftCents, SourceScope: ledger.ScopeGroup, SourceID: defaultSource(c), Downgrade: d.Downgrade, Bound: d.Bound})
	}
	return dst
}

// defaultSource is the group whose rule set c's default: the one the
// default names, else (a key minted before defaults named theirs) the
// first of c's groups.
func defaultSource(c Caller) string {
	if c.Default != nil && c.Default.Group != "" {
		return c.Default.Group
	}
	g, _, _ := strings.Cut(c.Groups, "\n")
	return g
}

// Person is the person's own limit for period, and where it comes from:
// the limit set for them (an explicit no-limit override ends the search),
// else the per-member default of the first of their groups that has one,
// else their group rule's Caddyfile budget. false: none applies.
func (s *Set) Person(c Caller, period string) (Applied, bool) {
	if c.Person == "" {
		return Applied{}, false
	}
	if s != nil {
		if l := s.find(ledger.ScopeUser, c.Person, period); l != nil {
			if l.AmountCents == nil {
				return Applied{}, false
			}
			return applied(ledger.ScopeUser, c.Person, l), true
		}
		for rest := c.Groups; rest != ""; {
			var g string
			g, rest, _ = strings.Cut(rest, "\n")
			if l := s.find(ledger.ScopeGroup, g, period); l != nil {
				if l.AmountCents == nil {
					return Applied{}, false
				}
				return applied(ledger.ScopeUser, c.Person, l), true
			}
		}
	}
	if d := c.Default; d != nil && d.Period == period {
		return Applied{Scope: ledger.ScopeUser, ScopeID: c.Person, Period: period, Cents: min(max(d.Cents, 0), money.MaxBudgetCents),
			SoftCents: d.SoftCents, SourceScope: ledger.ScopeGroup, SourceID: defaultSource(c), Downgrade: d.Downgrade, Bound: d.Bound}, true
	}
	return Applied{}, false
}
