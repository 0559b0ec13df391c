package caddymodule

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"

	"github.com/modelgate/modelgate/handlers/admin"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// spendLimits is what llm_admin's Spend Limits API stands on: the app's
// ledger and budgets, its alerts webhook for the chat lines, and the
// group rules' leads llm_auth registered.
func (a *App) spendLimits() admin.SpendLimits {
	s := admin.SpendLimits{Store: a.Store, Budgets: a.budgets, Leads: a.groupLeads, DowngradeTarget: a.downgrades.check, PublicURL: a.publicURL}
	if a.alerter != nil {
		s.Chat = a.alerter.Say
	}
	return s
}

// setGroupLeads records the leads the group rules name.
func (a *App) setGroupLeads(leads map[string][]string) {
	if a.leads != nil {
		a.leads.Store(&leads)
	}
}

// groupLeads are the leads of group.
func (a *App) groupLeads(group string) []string {
	if a.leads == nil {
		return nil
	}
	if m := a.leads.Load(); m != nil {
		return (*m)[group]
	}
	return nil
}

// downgradeTargets are what the sites' gateways say of an at_cap
// downgrade's alias, and the group rules' at_cap downgrades, so that a
// downgrade to an alias that is neither free nor priced within its bound
// is refused when it is set (the Spend Limits API) or configured (a group
// rule), not found past a cap.
type downgradeTargets struct {
	mu       sync.Mutex
	gateways []downgradeTarget
	groups   map[string]groupDowngrade
}

// downgradeTarget is a gateway's handlers.Gateway.DowngradeTarget.
type downgradeTarget func(alias string, bound ledger.DowngradeBound) (known bool, whyNot string)

// groupDowngrade is a group rule's at_cap downgrade.
type groupDowngrade struct {
	alias string
	bound ledger.DowngradeBound
}

// addGateway registers a site's gateway and checks the group rules
// registered before it.
func (t *downgradeTargets) addGateway(f downgradeTarget) error {
	t.mu.Lock()
	t.gateways = append(t.gateways, f)
	t.mu.Unlock()
	return t.checkGroups()
}

// addGroups registers group rules' downgrades and checks them against
// the gateways registered before them.
func (t *downgradeTargets) addGroups(groups map[string]groupDowngrade) error {
	t.mu.Lock()
	if t.groups == nil {
		t.groups = map[string]groupDowngrade{}
	}
	maps.Copy(t.groups, groups)
	t.mu.Unlock()
	return t.checkGroups()
}

// checkGroups refuses a group rule whose downgrade alias a gateway knows
// and does not find free or within the rule's bound.
func (t *downgradeTargets) checkGroups() error {
	t.mu.Lock()
	gateways, groups := slices.Clone(t.gateways), maps.Clone(t.groups)
	t.mu.Unlock()
	for _, g := range slices.Sorted(maps.Keys(groups)) {
		for _, f := range gateways {
			if known, why := f(groups[g].alias, groups[g].bound); known && why != "" {
				return fmt.Errorf("group %s: at_cap downgrade %s: %s", g, groups[g].alias, why)
			}
		}
	}
	return nil
}

// check is why alias may not be an at_cap downgrade's target within
// bound, "" when it may: every gateway that has it finds it free or
// priced within bound, and one has it. Without a gateway (llm_admin on a
// site of its own) nothing is known here; the gateway still serves a
// downgrade only to a free alias or one within the limit's bound.
func (t *downgradeTargets) check(alias string, bound ledger.DowngradeBound) string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	gateways := slices.Clone(t.gateways)
	t.mu.Unlock()
	if len(gateways) == 0 {
		return ""
	}
	known := false
	for _, f := range gateways {
		k, why := f(alias, bound)
		if k && why != "" {
			return why
		}
		known = known || k
	}
	if !known {
		return "no alias " + strconv.Quote(alias) + " in the models file"
	}
	return ""
}

// parseDowngradeBound reads what follows `at_cap downgrade <alias>`:
// nothing (a free alias), or `max_price <input> <output>` (US dollars per
// million tokens) and `allowance <dollars>`, both, in either order.
func parseDowngradeBound(args []string) (*ledger.DowngradeBound, error) {
	if len(args) == 0 {
		return nil, nil
	}
	var b ledger.DowngradeBound
	var err error
	seen := map[string]bool{}
	for len(args) > 0 {
		switch word := args[0]; {
		case word == "max_price" && len(args) >= 3 && !seen[word]:
			if b.MaxInputPico, err = money.ParsePerMillion(args[1], money.DollarsPerMillion); err != nil {
				return nil, fmt.Errorf("max_price input: %v", err)
			}
			if b.MaxOutputPico, err = money.ParsePerMillion(args[2], money.DollarsPerMillion); err != nil {
				return nil, fmt.Errorf("max_price output: %v", err)
			}
			seen[word], args = true, args[3:]
		case word == "allowance" && len(args) >= 2 && !seen[word]:
			if b.AllowanceCents, err = money.ParseDollars(args[1]); err != nil {
				return nil, fmt.Errorf("allowance: %v", err)
			}
			seen[word], args = true, args[2:]
		default:
			return nil, fmt.Errorf("after the alias, want max_price <input> <output> (US dollars per million tokens) and allowance <dollars> (what requests past the cap may spend), e.g. max_price 0.15 0.60 allowance 5")
		}
	}
	if !b.Priced() {
		return nil, fmt.Errorf("a priced downgrade needs both max_price and a non-zero allowance, e.g. max_price 0.15 0.60 allowance 5 (a free alias needs neither)")
	}
	return &b, nil
}
