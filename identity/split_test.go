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
