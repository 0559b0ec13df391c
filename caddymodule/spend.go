package caddymodule

import (
	"github.com/modelgate/modelgate/handlers/admin"
)

// spendLimits is what llm_admin's Spend Limits API stands on: the app's
// ledger and budgets, its alerts webhook for the chat lines, and the
// group rules' leads llm_auth registered.
func (a *App) spendLimits() admin.SpendLimits {
	s := admin.SpendLimits{Store: a.Store, Budgets: a.budgets, Leads: a.groupLeads}
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
