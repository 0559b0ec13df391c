package admin

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
)

// spendAdmin is the admin API over a fresh SQLite ledger with budgets
// reading it, and the chat lines it posted.
type spendAdmin struct {
	a       *Handler
	budgets *policy.Budgets
	mu      sync.Mutex
	chat    []string
}

func newSpendAdmin(t *testing.T) *spendAdmin {
	t.Helper()
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := policy.NewControls(nil)
	c.SetStore(s.(ledger.ControlStore))
	sa := &spendAdmin{budgets: policy.NewBudgets(func() ledger.SpendStore { return s.(ledger.SpendStore) }, nil)}
	sa.a = &Handler{Store: s, Controls: c, Spend: SpendLimits{Store: func() ledger.Store { return s }, Budgets: sa.budgets,
		Chat:      func(text string) { sa.mu.Lock(); sa.chat = append(sa.chat, text); sa.mu.Unlock() },
		PublicURL: "https://gw.example",
		Leads: func(g string) []string {
			if g == "eng" {
				return []string{"lead@example.com"}
			}
			return nil
		}}}
	return sa
}

// signedIn is the identity of email's key minted at sign-in, in group eng
// with its $2 monthly budget.
func (sa *spendAdmin) signedIn(t *testing.T, email string) *policy.Identity {
	t.Helper()
	budget := &ledger.PersonBudget{Cents: 200, Period: "monthly"}
	k, _, err := sa.a.Controls.MintKey(context.Background(), policy.NewKey{Name: "oidc: " + email, CreatedBy: &ledger.KeyCreator{Type: "oidc", ID: email,
		Email: email, Groups: "eng", Budget: budget}})
	if err != nil {
		t.Fatal(err)
	}
	return &policy.Identity{KeyID: k.ID, Owner: email, Groups: "eng", Runtime: true, PersonBudget: budget}
}

// call sends a request as id.
func (sa *spendAdmin) call(t *testing.T, id *policy.Identity, method, target, body string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if id != nil {
		req = req.WithContext(policy.WithIdentity(req.Context(), id))
	}
	rec := httptest.NewRecorder()
	sa.a.ServeHTTP(rec, req)
	return rec
}

func decode[T any](t *testing.T, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	return v
}

// A person at their group's cap asks for more; the approvers' chat line
// carries a link at the configured public URL; its POST, by an approver
// signed in, approves once, writes the person's limit,
// which admission uses after the next refresh, and tells them; the link
// then works no more.
func TestIncreaseRequestApprovedThroughTheChatLink(t *testing.T) {
	sa := newSpendAdmin(t)
	ctx := context.Background()
	// bob signed in: his key carries his group and its $2 monthly budget.
	bob := sa.signedIn(t, "bob@example.com")
	// bob is at his $2 cap: a $2.50 request is refused, naming how to ask.
	if err := sa.budgets.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, refusal := sa.budgets.Admit(ctx, bob, ledger.Limits{}, "", 25e11, time.Minute); refusal == nil || !strings.Contains(refusal.Message, "request-increase") {
		t.Fatalf("over his limit: %+v", refusal)
	}
	rec := sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"5000","reason":"release week @here"}`)
	if rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	created := decode[adminapi.IncreaseRequest](t, rec)
	if created.Status != "pending" || created.Period != "monthly" || created.RequestedAmount != "5000" || created.Actor.UserID != "bob@example.com" ||
		created.SpendSummary == nil || *created.SpendSummary.Amount != "200" || created.SpendSummary.Source.Type != "rbac_group" {
		t.Fatalf("created %+v", created)
	}
	if len(sa.chat) != 1 || !strings.Contains(sa.chat[0], "bob@example.com asks for a monthly spend limit of $50.00") ||
		!strings.Contains(sa.chat[0], "lead@example.com") || strings.Contains(sa.chat[0], "@here") {
		t.Fatalf("approvers' line: %q", sa.chat)
	}
	link := regexp.MustCompile(`https?://\S+`).FindString(sa.chat[0])
	u, err := url.Parse(link)
	if err != nil || !strings.HasPrefix(link, "https://gw.example"+SpendLinkPath) {
		t.Fatalf("link %q: want the configured public URL's", link)
	}
	// Another member sees no request of bob's, nor may approve it.
	carol := &policy.Identity{KeyID: "apikey_carol", Owner: "carol@example.com", Groups: "eng", Runtime: true}
	if rec := sa.call(t, carol, "POST", adminapi.IncreaseRequestsPath+"/"+created.ID+"/approve", `{"amount":"100000"}`); rec.Code != 404 {
		t.Errorf("carol approving: %d %s", rec.Code, rec.Body)
	}
	// Opening the link (a chat preview does) shows a page that tells
	// nothing of the request and changes nothing.
	if rec := sa.call(t, nil, "GET", u.RequestURI(), ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), "/ui/spend-link.js") ||
		strings.Contains(rec.Body.String(), "bob@example.com") {
		t.Fatalf("GET link: %d %s", rec.Code, rec.Body)
	}
	decision := func(action, token string) string {
		b, _ := json.Marshal(adminapi.SpendLinkDecision{Token: token, Action: action})
		return string(b)
	}
	token := u.Query().Get("key")
	// The token alone decides nothing: whoever reads the chat has it,
	// bob included (hostile review 4, finding 3).
	if rec := sa.call(t, nil, "POST", u.Path, decision("approve", token)); rec.Code != 401 {
		t.Errorf("the token without a sign-in: %d %s", rec.Code, rec.Body)
	}
	if rec := sa.call(t, bob, "POST", u.Path, decision("approve", token)); rec.Code != 403 || !strings.Contains(rec.Body.String(), "your own request") {
		t.Errorf("bob with his own request's token: %d %s", rec.Code, rec.Body)
	}
	if rec := sa.call(t, carol, "POST", u.Path, decision("approve", token)); rec.Code != 403 {
		t.Errorf("carol, no lead, with the token: %d %s", rec.Code, rec.Body)
	}
	lead := &policy.Identity{KeyID: "lead@example.com", Person: "lead@example.com", Groups: "eng"}
	// A wrong token does nothing, even for an approver.
	if rec := sa.call(t, lead, "POST", u.Path, decision("approve", "x")); rec.Code != 403 {
		t.Errorf("wrong token: %d", rec.Code)
	}
	if rec := sa.call(t, lead, "POST", u.Path, decision("approve", token)); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"status":"approved"`) {
		t.Fatalf("approve by link: %d %s", rec.Code, rec.Body)
	}
	if len(sa.chat) != 2 || !strings.Contains(sa.chat[1], "bob@example.com: your monthly spend limit is now $50.00") {
		t.Errorf("bob's line: %q", sa.chat)
	}
	// Replayed, the link resolves nothing more.
	if rec := sa.call(t, lead, "POST", u.Path, decision("deny", token)); !strings.Contains(rec.Body.String(), "already approved") {
		t.Errorf("replayed link: %d %s", rec.Code, rec.Body)
	}
	if err := sa.budgets.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if _, refusal := sa.budgets.Admit(ctx, bob, ledger.Limits{}, "", 25e11, time.Minute); refusal != nil {
		t.Errorf("after approval: %+v", refusal)
	}
	got := decode[adminapi.IncreaseRequest](t, sa.call(t, bob, "GET", adminapi.IncreaseRequestsPath+"/"+created.ID, ""))
	if got.Status != "approved" || got.ResolvedBy == nil || got.ResolvedBy.UserID != "lead@example.com" || got.ResolvedAt == nil {
		t.Errorf("bob's request now %+v", got)
	}
	// The effective report shows bob's own limit, from his user scope.
	eff := decode[adminapi.CursorPage[adminapi.SpendSummary]](t, sa.call(t, adminID, "GET", adminapi.EffectiveLimitsPath+"?period[]=monthly", ""))
	if len(eff.Data) != 1 || *eff.Data[0].Amount != "5000" || eff.Data[0].Source.Type != "user" || eff.Data[0].Scope.UserID != "bob@example.com" {
		t.Errorf("effective %+v", eff)
	}
}

// Setting, listing (with the beta header, filters and paging), getting
// and deleting limits; a lead approves and denies through the API.
func TestSpendLimitsCalls(t *testing.T) {
	sa := newSpendAdmin(t)
	for _, body := range []string{
		`{"amount":"100000","scope":{"type":"organization"}}`,
		`{"amount":"3000","scope":{"type":"rbac_group","rbac_group_id":"eng"},"period":"weekly"}`,
		`{"amount":"20000","scope":{"type":"rbac_group","rbac_group_id":"eng","shared":true}}`,
		`{"amount":null,"scope":{"type":"user","user_id":"vip@example.com"}}`,
		`{"amount":"500","scope":{"type":"api_key","api_key_id":"apikey_1"},"period":"daily","at_cap":{"action":"downgrade","alias":"local"}}`,
	} {
		if rec := sa.call(t, adminID, "POST", adminapi.SpendLimitsPath, body); rec.Code != 200 {
			t.Fatalf("set %s: %d %s", body, rec.Code, rec.Body)
		}
	}
	for body, want := range map[string]string{
		`{"scope":{"type":"organization"}}`:                                                                            "amount: required",
		`{"amount":"12.5","scope":{"type":"organization"}}`:                                                            "amount:",
		`{"amount":5,"scope":{"type":"organization"}}`:                                                                 "amount: must be a string",
		`{"amount":"5","scope":{"type":"user"}}`:                                                                       "scope.user_id: required",
		`{"amount":"5","scope":{"type":"seat_tier"}}`:                                                                  "scope.type",
		`{"amount":"5","scope":{"type":"organization"},"period":"x"}`:                                                  "period:",
		`{"amount":"5","scope":{"type":"organization"},"extra":1}`:                                                     "extra: unknown field",
		`{"amount":"5","scope":{"type":"user","user_id":"a","shared":true}}`:                                           "scope.shared",
		`{"amount":"5","scope":{"type":"organization"},"at_cap":{"action":"downgrade","alias":"c","allowance":"500"}}`: "a priced downgrade needs both",
		`{"amount":"5","scope":{"type":"organization"},"at_cap":{"action":"downgrade","alias":"c","max_price":{"input":"x","output":"1"},"allowance":"5"}}`: "at_cap.max_price.input",
		`{"amount":"5","scope":{"type":"organization"},"at_cap":{"action":"downgrade","alias":"c","max_price":{"input":"1","output":"1"},"allowance":"0"}}`: "non-zero allowance",
		`{"amount":"5","scope":{"type":"organization"},"at_cap":{"action":"refuse","allowance":"5"}}`:                                                       "only with action downgrade",
	} {
		rec := sa.call(t, adminID, "POST", adminapi.SpendLimitsPath, body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), want) || !strings.Contains(rec.Body.String(), `"invalid_request_error"`) {
			t.Errorf("set %s: %d %s; want 400 naming %q", body, rec.Code, rec.Body, want)
		}
	}
	member := &policy.Identity{KeyID: "apikey_m", Owner: "m@example.com", Runtime: true}
	if rec := sa.call(t, member, "POST", adminapi.SpendLimitsPath, `{"amount":"1","scope":{"type":"organization"}}`); rec.Code != 403 || !strings.Contains(rec.Body.String(), "permission_error") {
		t.Errorf("member sets a limit: %d %s", rec.Code, rec.Body)
	}
	if rec := sa.call(t, adminID, "GET", adminapi.SpendLimitsPath, ""); rec.Code != 400 || !strings.Contains(rec.Body.String(), adminapi.SpendLimitReadsBeta) {
		t.Errorf("list without the beta header: %d %s", rec.Code, rec.Body)
	}
	beta := []string{"anthropic-beta", adminapi.SpendLimitReadsBeta}
	var ids []string
	for next := ""; ; {
		target := adminapi.SpendLimitsPath + "?limit=2"
		if next != "" {
			target += "&page=" + next
		}
		page := decode[adminapi.CursorPage[adminapi.SpendLimit]](t, sa.call(t, adminID, "GET", target, "", beta...))
		for _, l := range page.Data {
			ids = append(ids, l.ID)
		}
		if page.NextPage == nil {
			break
		}
		next = *page.NextPage
	}
	if len(ids) != 5 {
		t.Fatalf("paged %d limits, want 5", len(ids))
	}
	users := decode[adminapi.CursorPage[adminapi.SpendLimit]](t, sa.call(t, adminID, "GET", adminapi.SpendLimitsPath+"?scope_type[]=user", "", beta...))
	if len(users.Data) != 1 || users.Data[0].Amount != nil || users.Data[0].Scope.UserID != "vip@example.com" {
		t.Errorf("user limits %+v", users)
	}
	first := decode[adminapi.CursorPage[adminapi.SpendLimit]](t, sa.call(t, adminID, "GET", adminapi.SpendLimitsPath, "", beta...)).Data[0]
	if first.Scope.Type != "organization" || *first.Amount != "100000" || first.Currency != "USD" || !first.IsEnabled || first.Type != "spend_limit" {
		t.Errorf("first limit %+v", first)
	}
	if rec := sa.call(t, adminID, "DELETE", adminapi.SpendLimitsPath+"/"+first.ID, ""); rec.Code != 200 || !strings.Contains(rec.Body.String(), "spend_limit_deleted") {
		t.Errorf("delete: %d %s", rec.Code, rec.Body)
	}
	if rec := sa.call(t, adminID, "GET", adminapi.SpendLimitsPath+"/"+first.ID, ""); rec.Code != 404 || !strings.Contains(rec.Body.String(), "not_found_error") {
		t.Errorf("get deleted: %d %s", rec.Code, rec.Body)
	}

	// A lead of eng resolves eng's members' requests, and only theirs.
	lead := &policy.Identity{KeyID: "apikey_lead", Owner: "lead@example.com", Groups: "eng", Runtime: true}
	dan := &policy.Identity{KeyID: "apikey_dan", Owner: "dan@example.com", Groups: "eng", Runtime: true}
	ops := &policy.Identity{KeyID: "apikey_olga", Owner: "olga@example.com", Groups: "ops", Runtime: true}
	r1 := decode[adminapi.IncreaseRequest](t, sa.call(t, dan, "POST", adminapi.IncreaseRequestsPath, `{"amount":"9000","period":"weekly"}`))
	r2 := decode[adminapi.IncreaseRequest](t, sa.call(t, ops, "POST", adminapi.IncreaseRequestsPath, `{"amount":"9000"}`))
	pending := decode[adminapi.CursorPage[adminapi.IncreaseRequest]](t, sa.call(t, lead, "GET", adminapi.IncreaseRequestsPath+"?status[]=pending", ""))
	if len(pending.Data) != 1 || pending.Data[0].ID != r1.ID {
		t.Errorf("the lead sees %+v; want dan's only", pending.Data)
	}
	if rec := sa.call(t, lead, "POST", adminapi.IncreaseRequestsPath+"/"+r2.ID+"/deny", `{}`); rec.Code != 404 {
		t.Errorf("lead denies another group's: %d", rec.Code)
	}
	approved := decode[adminapi.IncreaseRequest](t, sa.call(t, lead, "POST", adminapi.IncreaseRequestsPath+"/"+r1.ID+"/approve", `{"amount":"8000","suppress_notification":true}`))
	if approved.Status != "approved" || approved.SpendLimit == nil || *approved.SpendLimit.Amount != "8000" || approved.SpendLimit.Period != "weekly" ||
		approved.ResolvedBy == nil || approved.ResolvedBy.UserID != "lead@example.com" {
		t.Errorf("approved %+v", approved)
	}
	if rec := sa.call(t, adminID, "POST", adminapi.IncreaseRequestsPath+"/"+r1.ID+"/deny", `{}`); rec.Code != 400 {
		t.Errorf("deny an approved request: %d %s", rec.Code, rec.Body)
	}
	for range 2 { // idempotent on denied
		if d := decode[adminapi.IncreaseRequest](t, sa.call(t, adminID, "POST", adminapi.IncreaseRequestsPath+"/"+r2.ID+"/deny", `{}`)); d.Status != "denied" {
			t.Errorf("denied %+v", d)
		}
	}
	if rec := sa.call(t, &policy.Identity{KeyID: "ci", Role: policy.RoleUser}, "POST", adminapi.IncreaseRequestsPath, `{"amount":"1"}`); rec.Code != 403 {
		t.Errorf("a key of no one asks: %d", rec.Code)
	}
}

// FuzzSetSpendLimit holds the set decoder to its contract on any body:
// no panic, and an accepted body names a known scope and period and a
// bounded amount.
func FuzzSetSpendLimit(f *testing.F) {
	f.Add([]byte(`{"amount":"5000","scope":{"type":"user","user_id":"a"},"period":"daily"}`))
	f.Add([]byte(`{"amount":null,"scope":{"type":"rbac_group","rbac_group_id":"g","shared":true},"at_cap":{"action":"downgrade","alias":"x"}}`))
	f.Add([]byte(`{"amount":"99999999999","scope":{"type":"organization"}}`))
	f.Add([]byte(`{"amount":"100","scope":{"type":"session","user_id":"a"},"period":"total"}`))
	f.Add([]byte(`{"amount":null,"scope":{"type":"session","session_id":"claude:1"}}`))
	f.Add([]byte(`{"amount":"100","scope":{"type":"user","user_id":"a"},"at_cap":{"action":"downgrade","alias":"cheap","max_price":{"input":"15","output":"7.5"},"allowance":"500"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		l, msg := decodeSetSpendLimit(body)
		if msg != "" {
			return
		}
		if b := l.Bound; b != (ledger.DowngradeBound{}) && (!b.Priced() || l.Downgrade == "" || b.MaxInputPico > money.MaxPricePico ||
			b.MaxOutputPico > money.MaxPricePico || b.AllowanceCents > money.MaxBudgetCents) {
			t.Fatalf("bound %+v accepted", b)
		}
		if l.Scope == ledger.ScopeSession {
			// The scope shown reads back as the one set.
			if scope, id, msg := scopeOf(scopeWire(l.Scope, l.ScopeID)); msg != "" || scope != l.Scope || id != l.ScopeID {
				t.Fatalf("session scope %q reads back as %q %q %q", l.ScopeID, scope, id, msg)
			}
		}
		if b := l.Bound; b.Priced() {
			// What the API shows reads back as it was set.
			if back, msg := boundOf(atCapWire(l)); msg != "" || back != b {
				t.Fatalf("bound %+v reads back as %+v %q", b, back, msg)
			}
		}
		if l.Scope == "" || l.ScopeID == "" || (l.Scope == ledger.ScopeSession) != (l.Period == "total") ||
			(l.Period != "daily" && l.Period != "weekly" && l.Period != "monthly" && l.Period != "total") {
			t.Fatalf("accepted %q as %+v", body, l)
		}
		if l.AmountCents != nil && (*l.AmountCents < 0 || *l.AmountCents > 1e11) {
			t.Fatalf("amount %d accepted", *l.AmountCents)
		}
	})
}

// FuzzCreateIncrease: the increase request decoder never panics and
// accepts only a positive bounded amount and a clean reason.
func FuzzCreateIncrease(f *testing.F) {
	f.Add([]byte(`{"amount":"5000","reason":"release week","period":"monthly"}`))
	f.Add([]byte(`{"amount":"0"}`))
	f.Add([]byte(`{"amount":"1","reason":"\u202e@everyone"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, msg := decodeCreateIncrease(body)
		if msg != "" {
			return
		}
		if r.AmountCents <= 0 || len([]rune(r.Reason)) > maxReason+1 || strings.Contains(r.Reason, "\n") {
			t.Fatalf("accepted %q as %+v", body, r)
		}
	})
}
