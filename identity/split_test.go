package identity

import (
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// A group's budget leaves the key: it is the person's default limit,
// with the group's at_cap alias; the key keeps its rates.
func TestGrantSplitMakesTheBudgetThePersons(t *testing.T) {
	budget := int64(200)
	g := Groups{{Name: "eng", Limits: ledger.Limits{BudgetCents: &budget, BudgetPeriod: "monthly", SoftBudgetCents: 150, RPM: 10}, Downgrade: "local"}}.
		Resolve([]string{"eng"})
	key, person := g.Split()
	if key.BudgetCents != nil || key.SoftBudgetCents != 0 || key.RPM != 10 {
		t.Errorf("the key's limits %+v", key)
	}
	if person == nil || *person != (ledger.PersonBudget{Cents: 200, Period: "monthly", SoftCents: 150, Downgrade: "local", Group: "eng"}) {
		t.Errorf("the person's budget %+v", person)
	}
	if _, none := (Grant{}).Split(); none != nil {
		t.Errorf("no budget, a person's budget %+v", none)
	}
}

// TestGroupBreakerWithoutLimits (H12-3): a group whose only rule is a
// breaker gives its members' keys that breaker; with a budget from
// another group the person keeps both, and a group that sets both keeps
// its own breaker.
func TestGroupBreakerWithoutLimits(t *testing.T) {
	pause := &ledger.BreakerRules{Repeat: 3, Action: "pause"}
	stop := &ledger.BreakerRules{Turns: 50, Action: "stop"}
	budget := int64(500)
	rules := Groups{
		{Name: "engineering", Limits: ledger.Limits{Breaker: pause}},
		{Name: "ml", Limits: ledger.Limits{BudgetCents: &budget, RPM: 10}},
		{Name: "ops", Limits: ledger.Limits{RPM: 20, Breaker: stop}},
	}
	key, _ := rules.Resolve([]string{"engineering"}).Split()
	if key.Breaker != pause {
		t.Errorf("a breaker-only group: the key's breaker %+v", key.Breaker)
	}
	key, person := rules.Resolve([]string{"engineering", "ml"}).Split()
	if key.Breaker != pause || key.RPM != 10 || person == nil || person.Cents != 500 || person.Group != "ml" {
		t.Errorf("a breaker-only group and a budget group: key %+v, person %+v", key, person)
	}
	if key, _ := rules.Resolve([]string{"engineering", "ops"}).Split(); key.Breaker != stop || key.RPM != 20 {
		t.Errorf("the limits' own group's breaker: %+v", key)
	}
}
