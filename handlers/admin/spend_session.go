package admin

import (
	"slices"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/spendlimit"
)

// The session scope (an extension of Anthropic's Spend Limits API): a cap
// on each coding-agent session's whole spend, for everyone's sessions, a
// person's, a group's members' or one session id
// (docs/spend-limits-api.md, "Session limits").

// sessionScopeOf is the stored scope of a session scope object: at most
// one of user_id and rbac_group_id, or a session_id with the user_id or
// api_key_id whose session it is (a client picks its session id: one
// alone would let anyone who learns it take its exemption).
func sessionScopeOf(s adminapi.SpendScope) (scope, id, msg string) {
	given := 0
	for _, v := range []string{s.UserID, s.RBACGroupID, s.SessionID, s.APIKeyID} {
		if v == "" {
			continue
		}
		given++
		if len(v) > 256 || strings.ContainsAny(v, "\n\x00") {
			return "", "", "scope: a session scope's user_id, rbac_group_id, api_key_id or session_id is at most 256 characters, on one line"
		}
	}
	one := s.SessionID != "" && s.RBACGroupID == "" && given == 2
	if s.Shared || (s.SessionID != "" && !one) || (s.SessionID == "" && (given > 1 || s.APIKeyID != "")) {
		return "", "", "scope: a session scope caps every session, or names one of user_id (a person's sessions) or rbac_group_id (its members' sessions), or a session_id with the user_id or api_key_id whose session it is (one session)"
	}
	return ledger.ScopeSession, spendlimit.SessionScopeID(s.UserID, s.RBACGroupID, s.APIKeyID, s.SessionID), ""
}

// periodOf is the period of a limit on scope as set: a session's limit is
// for its whole life ("total", also when left out); every other is daily,
// weekly or monthly (default monthly).
func periodOf(scope, period string) (string, string) {
	if scope == ledger.ScopeSession {
		if period != "" && period != spendlimit.SessionPeriod {
			return "", "period: a session's limit is for its whole life: leave period out (or send \"total\")"
		}
		return spendlimit.SessionPeriod, ""
	}
	if period == "" {
		return "monthly", ""
	}
	if periods := spendlimit.Periods(); !slices.Contains(periods[:], period) {
		return "", "period: " + strconv.Quote(period) + " is not daily, weekly or monthly"
	}
	return period, ""
}

// sessionLimitOf is the cap on each of c's sessions, for the effective
// report; nil when no session-scoped limit applies to them.
func sessionLimitOf(set *spendlimit.Set, c spendlimit.Caller) *adminapi.SessionLimit {
	l := set.SessionDefault(c)
	if l == nil {
		return nil
	}
	return &adminapi.SessionLimit{Amount: strconv.FormatInt(*l.AmountCents, 10), Source: scopeWire(l.Scope, l.ScopeID), SpendLimitID: l.ID}
}
