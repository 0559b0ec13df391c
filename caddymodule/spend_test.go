package caddymodule

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// An at_cap downgrade to an alias a gateway has and finds not free is
// refused, whether the group rule or the gateway is provisioned first;
// the API's check also refuses an alias no gateway has (hostile review 4,
// finding 6).
func TestDowngradeTargetsRefuseAliasesThatAreNotFree(t *testing.T) {
	gateway := func(alias string, bound ledger.DowngradeBound) (bool, string) {
		switch alias {
		case "local":
			return true, ""
		case "unpriced":
			return true, `"unpriced" is not free: alias "unpriced": openai/gpt-x is a cloud model; an unpriced one is not free`
		case "cheap":
			if bound.Admits(150_000, 600_000) {
				return true, ""
			}
			return true, `"cheap" is dearer than the bound`
		}
		return false, ""
	}
	var none *downgradeTargets
	if why := none.check("anything", ledger.DowngradeBound{}); why != "" {
		t.Errorf("no app: %q", why)
	}
	groupsFirst := &downgradeTargets{}
	if err := groupsFirst.addGroups(map[string]groupDowngrade{"eng": {alias: "local"}, "ops": {alias: "unpriced"}}); err != nil {
		t.Fatalf("before any gateway: %v", err)
	}
	if err := groupsFirst.addGateway(gateway); err == nil || !strings.Contains(err.Error(), "group ops: at_cap downgrade unpriced") || !strings.Contains(err.Error(), "not free") {
		t.Errorf("the gateway after the groups: %v", err)
	}
	gatewayFirst := &downgradeTargets{}
	if err := gatewayFirst.addGateway(gateway); err != nil {
		t.Fatal(err)
	}
	if err := gatewayFirst.addGroups(map[string]groupDowngrade{"eng": {alias: "local"}}); err != nil {
		t.Errorf("a free alias: %v", err)
	}
	if err := gatewayFirst.addGroups(map[string]groupDowngrade{"ops": {alias: "unpriced"}}); err == nil || !strings.Contains(err.Error(), "group ops") {
		t.Errorf("the groups after the gateway: %v", err)
	}
	for alias, want := range map[string]string{"local": "", "unpriced": `"unpriced" is not free`, "nope": `no alias "nope"`} {
		if why := gatewayFirst.check(alias, ledger.DowngradeBound{}); (want == "" && why != "") || !strings.Contains(why, want) {
			t.Errorf("check(%s) = %q, want %q", alias, why, want)
		}
	}
}

// A group rule's downgrade to a priced alias is checked against its
// bound: within it, accepted; past it, a config error naming the group.
func TestDowngradeTargetsHoldPricedAliasesToTheirBound(t *testing.T) {
	gateway := func(alias string, bound ledger.DowngradeBound) (bool, string) {
		if bound.Admits(150_000, 600_000) {
			return true, ""
		}
		return true, `"cheap" is dearer than the bound`
	}
	ts := &downgradeTargets{}
	if err := ts.addGateway(gateway); err != nil {
		t.Fatal(err)
	}
	within := ledger.DowngradeBound{MaxInputPico: 150_000, MaxOutputPico: 600_000, AllowanceCents: 500}
	if err := ts.addGroups(map[string]groupDowngrade{"eng": {"cheap", within}}); err != nil {
		t.Errorf("within the bound: %v", err)
	}
	tight := ledger.DowngradeBound{MaxInputPico: 100_000, MaxOutputPico: 600_000, AllowanceCents: 500}
	if err := ts.addGroups(map[string]groupDowngrade{"ops": {"cheap", tight}}); err == nil || !strings.Contains(err.Error(), "group ops: at_cap downgrade cheap") {
		t.Errorf("past the bound: %v", err)
	}
	if why := ts.check("cheap", tight); !strings.Contains(why, "dearer") {
		t.Errorf("the API's check past the bound: %q", why)
	}
}

func TestParseDowngradeBound(t *testing.T) {
	b, err := parseDowngradeBound(strings.Fields("allowance 5 max_price 0.15 0.60"))
	if err != nil || *b != (ledger.DowngradeBound{MaxInputPico: 150_000, MaxOutputPico: 600_000, AllowanceCents: 500}) {
		t.Errorf("a bound: %+v %v", b, err)
	}
	if b, err := parseDowngradeBound(nil); b != nil || err != nil {
		t.Errorf("a free alias's: %+v %v", b, err)
	}
	for _, bad := range []string{"max_price 0.15 0.60", "allowance 5", "allowance 0 max_price 1 1", "max_price x 1 allowance 5",
		"allowance 5 allowance 6 max_price 1 1", "max_price 1", "cap 5"} {
		if _, err := parseDowngradeBound(strings.Fields(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParseDowngradeBound: whatever follows `at_cap downgrade <alias>`,
// no panic, and an accepted bound lets a priced alias in within the
// bounds every price and budget has.
func FuzzParseDowngradeBound(f *testing.F) {
	for _, s := range []string{"max_price 0.15 0.60 allowance 5", "allowance 5", "max_price 1e3 1 allowance 5", "allowance 1000000 max_price 1000 1000", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := parseDowngradeBound(strings.Fields(s))
		if err != nil || b == nil {
			return
		}
		if !b.Priced() || b.MaxInputPico > money.MaxPricePico || b.MaxOutputPico > money.MaxPricePico || b.AllowanceCents > money.MaxBudgetCents {
			t.Fatalf("%q accepted as %+v", s, *b)
		}
	})
}
