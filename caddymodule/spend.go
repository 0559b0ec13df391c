package caddymodule

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/modelgate/modelgate/handlers/admin"
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
// downgrade to an alias that is not free is refused when it is set (the
// Spend Limits API) or configured (a group rule), not found past a cap.
type downgradeTargets struct {
	mu       sync.Mutex
	gateways []func(alias string) (known bool, whyNot string)
	groups   map[string]string // group → alias
}

// addGateway registers a site's gateway and checks the group rules
// registered before it.
func (t *downgradeTargets) addGateway(f func(alias string) (known bool, whyNot string)) error {
	t.mu.Lock()
	t.gateways = append(t.gateways, f)
	t.mu.Unlock()
	return t.checkGroups()
}

// addGroups registers group rules' downgrades (group → alias) and checks
// them against the gateways registered before them.
func (t *downgradeTargets) addGroups(groups map[string]string) error {
	t.mu.Lock()
	if t.groups == nil {
		t.groups = map[string]string{}
	}
	for g, alias := range groups {
		t.groups[g] = alias
	}
	t.mu.Unlock()
	return t.checkGroups()
}

// checkGroups refuses a group rule whose downgrade alias a gateway knows
// and does not find free.
func (t *downgradeTargets) checkGroups() error {
	t.mu.Lock()
	gateways, groups := slices.Clone(t.gateways), make(map[string]string, len(t.groups))
	for g, alias := range t.groups {
		groups[g] = alias
	}
	t.mu.Unlock()
	for _, g := range slices.Sorted(func(yield func(string) bool) {
		for g := range groups {
			if !yield(g) {
				return
			}
		}
	}) {
		for _, f := range gateways {
			if known, why := f(groups[g]); known && why != "" {
				return fmt.Errorf("group %s: at_cap downgrade %s: only a free alias may take requests past a budget, and %s", g, groups[g], why)
			}
		}
	}
	return nil
}

// check is why alias may not be an at_cap downgrade's target, "" when it
// may: every gateway that has it finds it free, and one has it. Without a
// gateway (llm_admin on a site of its own) nothing is known here; the
// gateway still serves a downgrade only to a free alias.
func (t *downgradeTargets) check(alias string) string {
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
		k, why := f(alias)
		if k && why != "" {
			return strconv.Quote(alias) + " is not free, and only a free alias may take requests past a cap: " + why
		}
		known = known || k
	}
	if !known {
		return "no alias " + strconv.Quote(alias) + " in the models file"
	}
	return ""
}
