package policy

import (
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Budget alerts are levels, not crossings: a budget whose spend, as this
// instance knows it, is at or past a threshold is handed to Alert once
// per period by this instance, and the alerter's claim in the ledger
// database lets one instance only post it. Spend moves here when this
// instance settles a request and when the per-second refresh reads what
// the others settled, and both are checked, so a threshold passed by
// another instance's spend, or by an instance that died before it
// posted, is still alerted by any instance that served the budget.

// alertBit is one kind of alert a budget's watch has handed on.
type alertBit uint8

const (
	alertSoft alertBit = 1 << iota
	alert80
	alert100 // "100", or "session" for a session budget
)

// budgetWatch is a budget this instance charged or refused a request on
// lately: what its thresholds are checked against when the refresh
// moves its spend.
type budgetWatch struct {
	bg   budget // its limits as the last request found them
	sent alertBit
	seen time.Time
	// need is the least a request this budget refused needed, when that
	// refusal was caused by what others held rather than by spend: once
	// spend alone leaves less than that, the budget is reached. 0: none.
	need int64
}

// watchLocked is bg's watch, made on first use and brought up to date
// with bg's limits; the caller holds mu.
func (b *Budgets) watchLocked(bg budget, now time.Time) *budgetWatch {
	if b.watch == nil {
		b.watch = map[budgetKey]*budgetWatch{}
	}
	w := b.watch[bg.key]
	if w == nil {
		w = &budgetWatch{}
		b.watch[bg.key] = w
	}
	// Alerts are of the cap, never of a downgrade's allowance past it.
	bg.limitPico -= bg.allowance()
	w.bg, w.seen = bg, now
	return w
}

// checkLocked hands on every alert w's budget is due with spent spent:
// its soft limit, 80 % and its limit reached, or, after a refusal that
// reservations caused, too little left for that request. The caller
// holds mu.
func (b *Budgets) checkLocked(w *budgetWatch, spent int64) {
	bg := &w.bg
	if bg.key.scope != ledger.ScopeSession {
		if at := bg.softPico; at > 0 && spent >= at {
			b.alertOnceLocked(w, alertSoft, "soft", spent, 0)
		}
		if at := bg.limitPico / 5 * 4; at > 0 && spent >= at {
			b.alertOnceLocked(w, alert80, "80", spent, 0)
		}
	}
	switch {
	case bg.limitPico > 0 && spent >= bg.limitPico:
		b.alertOnceLocked(w, alert100, "100", spent, 0)
	case w.need > 0 && bg.limitPico-spent < w.need:
		b.alertOnceLocked(w, alert100, "100", spent, w.need)
	}
}

// refusedLocked is told that bg refused a request needing at least need
// with spent spent: it is reached when spend alone, without what other
// requests hold, leaves less than that (the request would be refused with
// nothing reserved); otherwise the refusal is remembered, for the refresh
// that finds the reservations became spend. A request needing more than
// the whole budget says nothing of its spend. The caller holds mu.
func (b *Budgets) refusedLocked(bg budget, spent, need int64, now time.Time) {
	if b.Alert == nil || spent < bg.limitPico && need > bg.limitPico {
		return
	}
	w := b.watchLocked(bg, now)
	if bg.limitPico-spent < max(need, 1) {
		b.alertOnceLocked(w, alert100, "100", spent, need)
		return
	}
	if w.need == 0 || need < w.need {
		w.need = need
	}
}

// alertOnceLocked hands the alert of kind to Alert unless this instance
// did this period. need is what a refused request needed, when its
// refusal sends the 100 % alert. The caller holds mu.
func (b *Budgets) alertOnceLocked(w *budgetWatch, bit alertBit, kind string, spent, need int64) {
	if w.sent&bit != 0 {
		return
	}
	w.sent |= bit
	bg := &w.bg
	if bg.key.scope == ledger.ScopeSession {
		kind = "session"
	}
	limit := bg.limitPico
	if kind == "soft" {
		limit = bg.softPico
	}
	if spent >= limit {
		need = 0 // spent past the limit says it all
	}
	b.Alert(BudgetAlert{Kind: kind, Scope: bg.key.scope, ScopeID: bg.key.id, Label: bg.label(), Period: bg.key.period,
		PeriodStart: time.UnixMicro(bg.key.start).UTC(), SpentPico: spent, LimitPico: limit, NeedPico: need, Resets: bg.resets})
}

// checkWatchedLocked checks every budget watched against the spend a
// refresh read, and forgets those whose period ended or that no request
// came to for a day. The caller holds mu.
func (b *Budgets) checkWatchedLocked(now time.Time) {
	for k, w := range b.watch {
		if now.Sub(w.seen) > sessionWatch || !w.bg.resets.IsZero() && !now.Before(w.bg.resets) {
			delete(b.watch, k)
			continue
		}
		b.checkLocked(w, b.spent[k]+b.localSum[k])
	}
}
