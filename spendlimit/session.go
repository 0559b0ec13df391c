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
// group's members' sessions, or for one session id of a person's or a
// key's; the first of those, most specific first, that has one applies
// (an explicit no-limit ends the search), and with a key's or
// workspace's session_budget the tighter.

// SessionPeriod is the period of a session-scoped limit: the session's
// whole life.
const SessionPeriod = "total"

// The scope ids of session-scoped limits: which sessions they cap.
const (
	EverySession   = "*"
	sessionOfUser  = "user:"
	sessionOfGroup = "rbac_group:"
	sessionOfKey   = "api_key:"
	oneSession     = "session:"
)

// SessionScopeID is the stored scope id of a session-scoped limit on the
// sessions of user, of group's members, or on session (none: every
// session). A limit on one session is also on the person (user) or the
// key it was set for: the client picks its session id, so one copied
// from another person's must not carry that person's exemption or cap.
// A one-session id stored before that (no person, no key) matches no
// request.
func SessionScopeID(user, group, key, session string) string {
	switch {
	case session != "" && user != "":
		return oneSession + session + "\n" + sessionOfUser + user
	case session != "" && key != "":
		return oneSession + session + "\n" + sessionOfKey + key
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
func SessionSelector(id string) (user, group, key, session string) {
	if s, ok := strings.CutPrefix(id, oneSession); ok {
		s, owner, _ := strings.Cut(s, "\n")
		if u, ok := strings.CutPrefix(owner, sessionOfUser); ok {
			return u, "", "", s
		}
		k, _ := strings.CutPrefix(owner, sessionOfKey)
		return "", "", k, s
	}
	if u, ok := strings.CutPrefix(id, sessionOfUser); ok {
		return u, "", "", ""
	}
	if g, ok := strings.CutPrefix(id, sessionOfGroup); ok {
		return "", g, "", ""
	}
	return "", "", "", ""
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
	var l *ledger.SpendLimit
	if c.Person != "" {
		l = s.find(ledger.ScopeSession, SessionScopeID(c.Person, "", "", c.Session), SessionPeriod)
	}
	if l == nil {
		l = s.find(ledger.ScopeSession, SessionScopeID("", "", c.KeyID, c.Session), SessionPeriod)
	}
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
