package policy

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/spendlimit"
)

// Spend limits beyond a key's, workspace's and session's own budgets: the
// organization's, a group's pool, a person's (every key minted for them
// counts toward one sum) and a key's, as set through the Spend Limits API
// or a group rule's per-person budget. They are budgets like the others:
// admitted through the same reservations, leases and spend rows.

// refreshLimits reads the spend limits with the spend, when st keeps them.
func (b *Budgets) refreshLimits(ctx context.Context, st ledger.SpendStore) error {
	ls, ok := st.(ledger.SpendLimitStore)
	if !ok {
		return nil
	}
	rows, err := ls.SpendLimits(ctx)
	if err != nil {
		return err
	}
	b.limits.Store(spendlimit.NewSet(rows))
	return nil
}

// SpendLimits are the spend limits as the last refresh read them.
func (b *Budgets) SpendLimits() *spendlimit.Set {
	if b == nil {
		return nil
	}
	return b.limits.Load()
}

// caller is id as spend limits see it.
func callerOf(id *Identity) spendlimit.Caller {
	return spendlimit.Caller{Person: id.PersonID(), Groups: id.Groups, KeyID: id.KeyID, Default: id.PersonBudget}
}

// applicable is every budget of the caller: its key's, workspace's and
// session's, and the spend limits that apply to it.
func (b *Budgets) applicable(id *Identity, ws ledger.Limits, session string, now time.Time) []budget {
	return applicableWith(b.limits.Load(), id, ws, session, now)
}

// applicableWith is applicable with the spend limits of set.
func applicableWith(set *spendlimit.Set, id *Identity, ws ledger.Limits, session string, now time.Time) []budget {
	list := applicable(id, ws, session, now)
	if set.Empty() && (id.PersonBudget == nil || id.PersonID() == "") {
		return list
	}
	c := callerOf(id)
	c.Session = session
	scoped := set.Append(make([]spendlimit.Applied, 0, 4), c)
	if need := len(list) + len(scoped); need > cap(list) {
		// One allocation for them all, not appendBudget's growth.
		list = append(make([]budget, 0, need), list...)
	}
	for i := range scoped {
		a := &scoped[i]
		if a.Scope == ledger.ScopeSession && tighterSession(list, a) {
			continue
		}
		cents := a.Cents
		list = appendBudget(list, id, session, now, a.Scope, a.ScopeID, &cents, a.Period, a.SoftCents)
		list[len(list)-1].limit = a
	}
	return list
}

// tighterSession folds a session-scoped spend limit into the session's
// own budget (a key's or workspace's session_budget) when list has one:
// one budget per spend, the tighter limit. false: list has none.
func tighterSession(list []budget, a *spendlimit.Applied) bool {
	for i := range list {
		if bg := &list[i]; bg.key.scope == ledger.ScopeSession {
			if pico := a.Cents * 1e10; pico < bg.limitPico {
				bg.limitPico, bg.limit = pico, a
			}
			return true
		}
	}
	return false
}

// scopeLabel names a spend limit's budget in refusals and alerts.
func scopeLabel(bg *budget) string {
	switch bg.key.scope {
	case ledger.ScopeOrganization:
		return "the organization"
	case ledger.ScopeGroup:
		return "group " + bg.key.id + " (shared by its members)"
	case ledger.ScopeUser:
		if bg.limit != nil && bg.limit.SourceScope == ledger.ScopeGroup {
			return "person " + bg.key.id + " (group " + bg.limit.SourceID + "'s limit for each member)"
		}
		return "person " + bg.key.id
	}
	return bg.key.scope + " " + bg.key.id
}

// LimitSource is where a spend limit /v1/me shows was set.
type LimitSource struct {
	Scope   string `json:"scope"`
	ID      string `json:"id,omitempty"`
	LimitID string `json:"spend_limit_id,omitempty"`
}

// statusSource names a spend limit's scope and source in s.
func statusSource(s *BudgetStatus, bg *budget) {
	if bg.limit == nil {
		return
	}
	s.ScopeID = bg.key.id
	s.Source = &LimitSource{Scope: bg.limit.SourceScope, ID: bg.limit.SourceID, LimitID: bg.limit.LimitID}
}

// askHint tells a person refused by their own limit how to ask for more;
// a pool's or the organization's limit is an admin's to raise.
func askHint(bg *budget) string {
	switch bg.key.scope {
	case ledger.ScopeUser:
		return ". To ask for a higher limit: caddy modelgate request-increase --amount <dollars> --reason \"...\" (or POST " + IncreaseRequestPath + ")"
	case ledger.ScopeGroup, ledger.ScopeOrganization:
		return ". This limit is shared: ask a gateway admin to raise it"
	}
	return ""
}

// IncreaseRequestPath is where a person asks for a higher spend limit
// with their own key or session (an extension of Anthropic's API, which
// lists, approves and denies requests but makes them in its own app).
const IncreaseRequestPath = "/v1/organizations/spend_limit_increase_requests"

// EffectiveLimit is the limit that binds a person in one period, as the
// Spend Limits API's effective report shows it.
type EffectiveLimit struct {
	Period string
	Cents  int64 // the binding limit
	// SpentPico is the person's own spend this period; RemainingPico what
	// the binding limit leaves them (a pool's or the organization's room
	// may be less than their own limit's).
	SpentPico, RemainingPico       int64
	SourceScope, SourceID, LimitID string
	Resets                         time.Time
}

// Effective is, per period, the spend limit of set (nil: those admission
// holds now, which read the ledger every second) that binds the person c
// names: of every limit admission would hold them to in that period, the
// one with the least room, with their own spend. It reads the spend
// admission reads, so the report and admission agree.
func (b *Budgets) Effective(set *spendlimit.Set, c spendlimit.Caller) []EffectiveLimit {
	if b == nil || c.Person == "" {
		return nil
	}
	if set == nil {
		set = b.limits.Load()
	}
	now := b.now()
	id := &Identity{Owner: c.Person, Groups: c.Groups, PersonBudget: c.Default}
	list := applicableWith(set, id, ledger.Limits{}, "", now)
	var out []EffectiveLimit
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, period := range spendlimit.Periods() {
		own := budgetKey{ledger.ScopeUser, c.Person, period, ledger.PeriodStart(period, now).UnixMicro()}
		found := false
		var e EffectiveLimit
		for i := range list {
			bg := &list[i]
			if bg.key.period != period || bg.limit == nil {
				continue
			}
			left := max(bg.limitPico-(b.usedLocked(bg.key)-b.reserved[bg.key]), 0)
			if found && left >= e.RemainingPico {
				continue
			}
			found = true
			e = EffectiveLimit{Period: period, Cents: bg.limitPico / 1e10, RemainingPico: left, Resets: bg.resets,
				SourceScope: bg.limit.SourceScope, SourceID: bg.limit.SourceID, LimitID: bg.limit.LimitID}
		}
		if found {
			e.SpentPico = b.usedLocked(own) - b.reserved[own]
			out = append(out, e)
		}
	}
	return out
}

// SpendLinkPath starts the approvers' chat link to an increase request
// (SpendLinkPath + id + "?token=…"), answered without a key.
const SpendLinkPath = "/ui/spend-requests/"

// MCPConnectPath starts a person's pages and links that connect their own
// account to an auth: oauth MCP server (package mcp/upstreamauth): a
// dashboard session's, like the admin API.
const MCPConnectPath = "/mcp-connect/"

// Downgrade is the alias a request refused by est's estimate goes to
// instead (at_cap downgrade): every budget without room for even the
// request's floor must be a spend limit that names one, and the first
// such limit's alias is it. "" refuses the request: some budget at its
// cap says refuse. The caller serves the alias only when its whole chain
// is free (docs/spend-limits-api.md), so no fallback reaches a paid
// model past a spent budget.
func (b *Budgets) Downgrade(id *Identity, ws ledger.Limits, session string, est Estimate) string {
	if b == nil || id == nil {
		return ""
	}
	list := b.applicable(id, ws, session, b.now())
	need := max(est.floor(), 1)
	to := ""
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range list {
		bg := &list[i]
		if bg.limitPico-b.usedLocked(bg.key) >= need {
			continue
		}
		if bg.limit == nil || bg.limit.Downgrade == "" {
			return ""
		}
		if to == "" {
			to = bg.limit.Downgrade
		}
	}
	return to
}
