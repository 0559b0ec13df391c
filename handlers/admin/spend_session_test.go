package admin

import (
	"context"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/adminapi"
)

// Session-scoped limits through the API: for every session, a person's
// sessions and one session id; shown back with their scope and the
// period "total"; listed by scope_type session; refused with a period or
// two selectors; and the effective report shows each member the cap on
// each of their sessions.
func TestSpendLimitSessionScope(t *testing.T) {
	sa := newSpendAdmin(t)
	for body, want := range map[string]string{
		`{"amount":"500","scope":{"type":"session"}}`:                                              `"period":"total","scope":{"type":"session"}`,
		`{"amount":"200","scope":{"type":"session","user_id":"bob@example.com"},"period":"total"}`: `"scope":{"type":"session","user_id":"bob@example.com"}`,
		`{"amount":"300","scope":{"type":"session","rbac_group_id":"eng"}}`:                        `"scope":{"type":"session","rbac_group_id":"eng"}`,
		`{"amount":null,"scope":{"type":"session","user_id":"a","session_id":"claude:1234"}}`:      `"scope":{"type":"session","user_id":"a","session_id":"claude:1234"}`,
		`{"amount":null,"scope":{"type":"session","api_key_id":"k","session_id":"claude:1234"}}`:   `"scope":{"type":"session","api_key_id":"k","session_id":"claude:1234"}`,
	} {
		if rec := sa.call(t, adminID, "POST", adminapi.SpendLimitsPath, body); rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("set %s: %d %s; want %s", body, rec.Code, rec.Body, want)
		}
	}
	for body, want := range map[string]string{
		`{"amount":"5","scope":{"type":"session"},"period":"monthly"}`:                                            "period: a session's limit is for its whole life",
		`{"amount":"5","scope":{"type":"session","session_id":"s"}}`:                                              "a session_id with the user_id or api_key_id whose session it is",
		`{"amount":"5","scope":{"type":"session","user_id":"a","api_key_id":"k","session_id":"s"}}`:               "a session_id with the user_id or api_key_id whose session it is",
		`{"amount":"5","scope":{"type":"session","rbac_group_id":"g","session_id":"s"}}`:                          "a session_id with the user_id or api_key_id whose session it is",
		`{"amount":"5","scope":{"type":"session","api_key_id":"k"}}`:                                              "a session_id with the user_id or api_key_id whose session it is",
		`{"amount":"5","scope":{"type":"user","user_id":"a","session_id":"s"}}`:                                   "scope.session_id: only a session scope",
		`{"amount":"5","scope":{"type":"organization"},"period":"total"}`:                                         `total\" is not daily, weekly or monthly`,
		`{"amount":"5","scope":{"type":"session","user_id":"a","session_id":"` + strings.Repeat("s", 257) + `"}}`: "at most 256 characters",
	} {
		if rec := sa.call(t, adminID, "POST", adminapi.SpendLimitsPath, body); rec.Code != 400 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("set %s: %d %s; want 400 naming %q", body, rec.Code, rec.Body, want)
		}
	}
	rec := sa.call(t, adminID, "GET", adminapi.SpendLimitsPath+"?scope_type[]=session", "", "anthropic-beta", adminapi.SpendLimitReadsBeta)
	page := decode[adminapi.CursorPage[adminapi.SpendLimit]](t, rec)
	if rec.Code != 200 || len(page.Data) != 5 {
		t.Errorf("listing session limits: %d %s", rec.Code, rec.Body)
	}
	// bob's sessions are capped at his own; carol's (eng) at the group's.
	sa.signedIn(t, "bob@example.com")
	sa.signedIn(t, "carol@example.com")
	if err := sa.budgets.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	eff := decode[adminapi.CursorPage[adminapi.SpendSummary]](t, sa.call(t, adminID, "GET", adminapi.EffectiveLimitsPath+"?period[]=monthly", ""))
	caps := map[string]string{}
	for _, row := range eff.Data {
		if row.SessionLimit != nil {
			caps[row.Actor.UserID] = row.SessionLimit.Amount + " " + row.SessionLimit.Source.UserID + row.SessionLimit.Source.RBACGroupID
		}
	}
	if caps["bob@example.com"] != "200 bob@example.com" || caps["carol@example.com"] != "300 eng" {
		t.Errorf("session caps in the effective report: %v (%+v)", caps, eff.Data)
	}
}
