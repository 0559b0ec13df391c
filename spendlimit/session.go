package spendlimit

import (
	"strings"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// A session-scoped limit caps what one coding-agent session spends in its
// whole life (period "total"), as a key's session_budget does, on every
// instance: its spend is the session's (ledger.ScopeSession, per key and
// session). It is set for every session, for a person's sessions, for a
// group's members' sessions, or for one session id; the first of those,
// most specific first, that has one applies (an explicit no-limit ends the
// search), and with a key's or workspace's session_budget the tighter.

// SessionPeriod is the period of a session-scoped limit: the session's
// whole life.
const SessionPeriod = "total"

// The scope ids of session-scoped limits: which sessions they cap.
const (
	EverySession   = "*"
	sessionOfUser  = "user:"
	sessionOfGroup = "rbac_group:"
	oneSession     = "session:"
)

// SessionScopeID is the stored scope id of a session-scoped limit on the
// sessions of user, of group's members, or on session (at most one
// given; none: every session).
func SessionScopeID(user, group, session string) string {
	switch {
	case session != "":
		return oneSession + session
	case user != "":
		return sessionOfUser + user
	case group != "":
		return sessionOfGroup + group
	}
	return EverySession
}

// SessionSelector is what SessionScopeID made id of.
func SessionSelector(id string) (user, group, session string) {
	if s, ok := strings.CutPrefix(id, oneSession); ok {
		return "", "", s
	}
	if u, ok := strings.CutPrefix(id, sessionOfUser); ok {
		return u, "", ""
	}
	if g, ok := strings.CutPrefix(id, sessionOfGroup); ok {
		return "", g, ""
	}
	return "", "", ""
}

// SessionDefault is the session-scoped limit on c's sessions whatever
// their id: set for c's person, else for the first of their groups that
// has one, else for every session; nil when none applies (or the first
// found is an explicit no-limit).
func (s *Set) SessionDefault(c Caller) *ledger.SpendLimit {
	if s == nil {
		return nil
	}
	l := (*ledger.SpendLimit)(nil)
	if c.Person != "" {
		l = s.find(ledger.ScopeSession, sessionOfUser+c.Person, SessionPeriod)
	}
	for rest := c.Groups; l == nil && rest != ""; {
		var g string
		g, rest, _ = strings.Cut(rest, "\n")
		l = s.find(ledger.ScopeSession, sessionOfGroup+g, SessionPeriod)
	}
	if l == nil {
		l = s.find(ledger.ScopeSession, EverySession, SessionPeriod)
	}
	if l == nil || l.AmountCents == nil {
		return nil
	}
	return l
}

// Session is the session-scoped limit on c's session, counted on its
// spend; false when none applies.
func (s *Set) Session(c Caller) (Applied, bool) {
	if s == nil || c.Session == "" {
		return Applied{}, false
	}
	l := s.find(ledger.ScopeSession, oneSession+c.Session, SessionPeriod)
	if l == nil {
		l = s.SessionDefault(c)
	}
	if l == nil || l.AmountCents == nil {
		return Applied{}, false
	}
	return Applied{Scope: ledger.ScopeSession, ScopeID: ledger.SessionScopeID(c.KeyID, c.Session), Period: SessionPeriod,
		Cents: min(max(*l.AmountCents, 0), money.MaxBudgetCents), SourceScope: l.Scope, SourceID: l.ScopeID, LimitID: l.ID,
		Downgrade: l.Downgrade, Bound: &l.Bound}, true
}
