package admin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/policy"
)

// controlsAdmin is an admin API over a fresh SQLite key store, with the
// Auth that reads the same keys.
func controlsAdmin(t *testing.T) (*Handler, *policy.Auth) {
	t.Helper()
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := policy.NewControls(nil)
	c.SetStore(s.(ledger.ControlStore))
	auth, err := policy.NewAuth([]policy.Key{{Secret: testAdminKey, ID: "admin", Admin: true}})
	if err != nil {
		t.Fatal(err)
	}
	auth.WithRuntime(c)
	return &Handler{Store: s, Controls: c}, auth
}

var adminID = &policy.Identity{KeyID: "admin", Role: policy.RoleAdmin}

func adminCall(t *testing.T, a *Handler, method, target, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	req = req.WithContext(policy.WithIdentity(req.Context(), adminID))
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	var m map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &m)
	return rec, m
}

func mustCreate(t *testing.T, a *Handler, target, body string) map[string]any {
	t.Helper()
	rec, m := adminCall(t, a, http.MethodPost, target, body)
	if rec.Code != http.StatusOK {
		t.Fatalf("POST %s %s: %d %s", target, body, rec.Code, rec.Body)
	}
	return m
}

func identify(a *policy.Auth, secret string) (*policy.Identity, int, string) {
	id, e := a.Identify(secret)
	if e != nil {
		return nil, e.Status, e.Message
	}
	return id, 200, ""
}

// TestArchivedWorkspaceRefusesItsKeys: archiving a workspace refuses its
// keys (it used to lift every limit instead), naming the workspace; its
// limits stay what the workspace had.
func TestArchivedWorkspaceRefusesItsKeys(t *testing.T) {
	a, auth := controlsAdmin(t)
	ws := mustCreate(t, a, workspacesPath, `{"name":"tight","budget":{"amount":"1","period":"monthly"},"rpm":1000}`)
	wsID := ws["id"].(string)
	k := mustCreate(t, a, keysPath, `{"name":"in-tight","workspace_id":"`+wsID+`"}`)
	secret := k["value"].(string)
	if _, code, msg := identify(auth, secret); code != 200 {
		t.Fatalf("before archive: %d %s", code, msg)
	}
	mustCreate(t, a, workspacesPath+"/"+wsID+"/archive", "")
	_, code, msg := identify(auth, secret)
	if code != http.StatusForbidden || !strings.Contains(msg, wsID) || !strings.Contains(msg, "archived") {
		t.Errorf("after archive: %d %q, want 403 naming %s as archived", code, msg, wsID)
	}
	if l := a.Controls.WorkspaceLimits(wsID); l.BudgetCents == nil || *l.BudgetCents != 1 || l.RPM != 1000 {
		t.Errorf("archived workspace limits %+v, want its own", l)
	}
	// A second archive keeps the first time; an update cannot unarchive.
	first := mustCreate(t, a, workspacesPath+"/"+wsID, `{"rpm":5}`)["archived_at"]
	if again := mustCreate(t, a, workspacesPath+"/"+wsID+"/archive", "")["archived_at"]; first == nil || again != first {
		t.Errorf("archived_at %v then %v", first, again)
	}
	if rec, _ := adminCall(t, a, http.MethodPost, workspacesPath+"/"+wsID, `{"status":"active"}`); rec.Code != 400 || !strings.Contains(rec.Body.String(), "status") {
		t.Errorf("reactivate workspace: %d %s", rec.Code, rec.Body)
	}
	// Whatever the request said, the workspace is still archived and its
	// keys still refused.
	if rec, m := adminCall(t, a, http.MethodGet, workspacesPath+"/"+wsID, ""); rec.Code != 200 || m["archived_at"] != first {
		t.Errorf("after the reactivation attempt: %d archived_at %v, want %v", rec.Code, m["archived_at"], first)
	}
	if _, code, _ := identify(auth, secret); code != http.StatusForbidden {
		t.Errorf("the archived workspace's key after the reactivation attempt: %d, want 403", code)
	}
}

// TestArchivedKeyIsFinal: {"status":"active"} on an archived key is a 400
// naming status, and the key stays refused.
func TestArchivedKeyIsFinal(t *testing.T) {
	a, auth := controlsAdmin(t)
	k := mustCreate(t, a, keysPath, `{"name":"k"}`)
	id, secret := k["id"].(string), k["value"].(string)
	mustCreate(t, a, keysPath+"/"+id, `{"status":"archived"}`)
	rec, m := adminCall(t, a, http.MethodPost, keysPath+"/"+id, `{"status":"active"}`)
	if rec.Code != 400 || !strings.HasPrefix(m["error"].(map[string]any)["message"].(string), "status:") {
		t.Errorf("reactivate: %d %s", rec.Code, rec.Body)
	}
	if rec, _ := adminCall(t, a, http.MethodPost, keysPath+"/"+id, `{"status":"inactive"}`); rec.Code != 400 {
		t.Errorf("archived to inactive: %d %s", rec.Code, rec.Body)
	}
	if _, code, _ := identify(auth, secret); code != 401 {
		t.Errorf("archived key: %d", code)
	}
	// Nor do its other fields change: a budget or limit on a key nobody
	// can use is refused, saying why, and nothing is written.
	for _, body := range []string{`{"budget":{"amount":"500","period":"monthly"}}`, `{"rpm":5}`, `{"name":"k2"}`, `{"models":["echo"]}`, `{"status":"archived","rpm":5}`} {
		rec, _ := adminCall(t, a, http.MethodPost, keysPath+"/"+id, body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), "archived, which is final") {
			t.Errorf("edit %s of an archived key: %d %s, want 400 saying it is archived", body, rec.Code, rec.Body)
		}
	}
	if _, got := adminCall(t, a, http.MethodGet, keysPath+"/"+id, ""); got["status"] != "archived" || got["name"] != "k" || got["rpm"] != nil || got["budget"] != nil {
		t.Errorf("after refused edits: %v", got)
	}
	// Archiving it again is a no-op, not an error (a retried revoke).
	if got := mustCreate(t, a, keysPath+"/"+id, `{"status":"archived"}`); got["status"] != "archived" {
		t.Errorf("archive again: %v", got["status"])
	}
}

// TestConcurrentAdminUpdatesKeepBoth: an archive and a rate edit racing
// on one key, 20 times: both land every time, and the key never ends
// active (the whole-row write put a revoked key back in service).
func TestConcurrentAdminUpdatesKeepBoth(t *testing.T) {
	a, _ := controlsAdmin(t)
	for trial := range 20 {
		id := mustCreate(t, a, keysPath, `{"name":"race"}`)["id"].(string)
		var wg sync.WaitGroup
		var edited int // the rpm edit's status: 200 before the archive, 400 after it
		for _, body := range []string{`{"status":"archived"}`, `{"rpm":5}`} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rec, _ := adminCall(t, a, http.MethodPost, keysPath+"/"+id, body)
				if body == `{"rpm":5}` {
					edited = rec.Code
					if rec.Code == 400 && strings.Contains(rec.Body.String(), "archived") {
						return
					}
				}
				if rec.Code != 200 {
					t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
				}
			}()
		}
		wg.Wait()
		_, got := adminCall(t, a, http.MethodGet, keysPath+"/"+id, "")
		if wantRPM := edited == 200; got["status"] != "archived" || (got["rpm"] == float64(5)) != wantRPM {
			t.Fatalf("trial %d: status %v rpm %v after the edit's %d, want archived, and rpm 5 only if the edit landed first", trial, got["status"], got["rpm"], edited)
		}
	}
}

// TestAdminRefusesBadValues: amounts past the bound, negative or not
// numbers, and names that cannot be stored are 400s naming the field.
func TestAdminRefusesBadValues(t *testing.T) {
	a, _ := controlsAdmin(t)
	for body, field := range map[string]string{
		`{"name":"big","budget":{"amount":"1000000000","period":"monthly"}}`:  "budget.amount",
		`{"name":"wrap","budget":{"amount":"1844674407","period":"monthly"}}`: "budget.amount",
		`{"name":"neg","budget":{"amount":"-1","period":"monthly"}}`:          "budget.amount",
		`{"name":"nan","budget":{"amount":"NaN","period":"monthly"}}`:         "budget.amount",
		`{"name":"frac","budget":{"amount":"0.5","period":"monthly"}}`:        "budget.amount",
		`{"name":"soft","soft_budget":"100000001"}`:                           "soft_budget",
		`{"name":"soft0","soft_budget":"0"}`:                                  "soft_budget",
		`{"name":"sess","session_budget":"Infinity"}`:                         "session_budget",
		`{"name":"a\u0000b"}`: "name",
	} {
		rec, m := adminCall(t, a, http.MethodPost, keysPath, body)
		e, _ := m["error"].(map[string]any)
		msg, _ := e["message"].(string)
		if rec.Code != 400 || !strings.HasPrefix(msg, field+":") {
			t.Errorf("%s: %d %q, want 400 naming %s", body, rec.Code, msg, field)
		}
	}
	// (JSON decoding turns invalid UTF-8 in a body into U+FFFD; a NUL
	// escape is what reaches the database.)
	if rec, _ := adminCall(t, a, http.MethodPost, workspacesPath, `{"name":"a\u0000b"}`); rec.Code != 400 || !strings.Contains(rec.Body.String(), `"name:`) {
		t.Errorf("workspace name with NUL: %d %s", rec.Code, rec.Body)
	}
	for _, path := range []string{keysPath + "/apikey_%00x", keysPath + "/apikey_%ff", workspacesPath + "/wrkspc_%00", workspacesPath + "/wrkspc_%ff/archive"} {
		if rec, _ := adminCall(t, a, http.MethodPost, path, `{"rpm":1}`); rec.Code != 404 {
			t.Errorf("%s: %d %s, want 404", path, rec.Code, rec.Body)
		}
	}
	// The largest amount is accepted.
	mustCreate(t, a, keysPath, `{"name":"max","budget":{"amount":"100000000","period":"monthly"}}`)
}

// TestBudgetZeroAndNone: budget "0" is a budget that admits no paid use,
// shown as "0"; null removes it.
func TestBudgetZeroAndNone(t *testing.T) {
	a, auth := controlsAdmin(t)
	k := mustCreate(t, a, keysPath, `{"name":"stopped","budget":{"amount":"0","period":"monthly"},"session_budget":"0"}`)
	id, secret := k["id"].(string), k["value"].(string)
	if b, _ := k["budget"].(map[string]any); b == nil || b["amount"] != "0" || k["session_budget"] != "0" {
		t.Fatalf("budget 0 shown as %v, session %v", k["budget"], k["session_budget"])
	}
	ident, _, _ := identify(auth, secret)
	bud := policy.NewBudgets(nil, nil)
	if _, refusal := bud.Admit(context.Background(), ident, ledger.Limits{}, "", 1, time.Minute); refusal == nil || refusal.Status != 429 {
		t.Errorf("budget 0 admitted a paid request: %+v", refusal)
	}
	got := mustCreate(t, a, keysPath+"/"+id, `{"budget":null,"session_budget":null}`)
	if got["budget"] != nil || got["session_budget"] != nil {
		t.Errorf("after null: %v %v", got["budget"], got["session_budget"])
	}
	ident, _, _ = identify(auth, secret)
	if _, refusal := bud.Admit(context.Background(), ident, ledger.Limits{}, "s1", 1, time.Minute); refusal != nil {
		t.Errorf("no budget refused: %s", refusal.Message)
	}
}

// TestCaddyfileWorkspaceLimitsShown: a Caddyfile workspace's limits,
// enforced all along, show in the admin API too.
func TestCaddyfileWorkspaceLimitsShown(t *testing.T) {
	a, _ := controlsAdmin(t)
	_ = a.Controls.RegisterStatic("", nil, []string{"frontend"}, map[string]ledger.Limits{
		"frontend": {BudgetCents: ledger.Cents(50000), BudgetPeriod: "weekly", SessionBudgetCents: ledger.Cents(0), RPM: 600}})
	_, got := adminCall(t, a, http.MethodGet, workspacesPath+"/frontend", "")
	b, _ := got["budget"].(map[string]any)
	if b == nil || b["amount"] != "50000" || b["period"] != "weekly" || got["rpm"] != float64(600) || got["session_budget"] != "0" {
		t.Errorf("frontend: %v", got)
	}
}

// TestAdminWaitsForTheStore: a call made before the ledger is open waits
// for it instead of failing; one that outwaits the bound is a 503 with
// retry-after.
func TestAdminWaitsForTheStore(t *testing.T) {
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	c := policy.NewControls(nil)
	a := &Handler{Store: s, Controls: c}
	c.OpenWait = time.Millisecond
	rec, _ := adminCall(t, a, http.MethodPost, keysPath, `{"name":"early"}`)
	if rec.Code != 503 || rec.Header().Get("Retry-After") == "" {
		t.Errorf("store never opened: %d %q %s", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
	c.OpenWait = time.Minute
	done := make(chan *httptest.ResponseRecorder)
	go func() {
		rec, _ := adminCall(t, a, http.MethodPost, keysPath, `{"name":"early"}`)
		done <- rec
	}()
	// The call is waiting (or not yet made); either way it is answered
	// once the store is attached.
	c.SetStore(s.(ledger.ControlStore))
	if rec := <-done; rec.Code != 200 {
		t.Errorf("store opened during the call: %d %s", rec.Code, rec.Body)
	}
}

// FuzzApplyLimits: whatever the admin API is sent as limits, an accepted
// amount is inside the bound (cents × 10^10 fits an int64) and no rate is
// negative.
func FuzzApplyLimits(f *testing.F) {
	for _, s := range []string{`{"amount":"5000","period":"monthly"}`, `null`, `"0"`, `"100000001"`, `"NaN"`, `-1`, `{"amount":"1e3","period":"daily"}`, `"\u0000"`} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, budget, other string) {
		var l ledger.Limits
		o := json.RawMessage(other)
		req := limitsRequest{Budget: json.RawMessage(budget), SoftBudget: o, SessionBudget: o, RPM: o, TPM: o, MaxParallel: o}
		if applyLimits(&l, &req) != "" {
			return
		}
		for _, c := range []*int64{l.BudgetCents, l.SessionBudgetCents, &l.SoftBudgetCents} {
			if c != nil && (*c < 0 || *c > money.MaxBudgetCents) {
				t.Fatalf("accepted %d cents from %q / %q", *c, budget, other)
			}
		}
		if l.RPM < 0 || l.TPM < 0 || l.MaxParallel < 0 {
			t.Fatalf("negative rate from %q", other)
		}
	})
}

// TestKeyModelsNullRemoves: "models": null on an update removes the
// allow-list (every alias), as the keys API documents for null; a body
// without models leaves it; a non-list is a 400 naming the field.
func TestKeyModelsNullRemoves(t *testing.T) {
	a, auth := controlsAdmin(t)
	k := mustCreate(t, a, keysPath, `{"name":"narrow","models":["echo"]}`)
	id, secret := k["id"].(string), k["value"].(string)
	allowed := func() map[string]struct{} {
		ident, _, msg := identify(auth, secret)
		if ident == nil {
			t.Fatalf("the key stopped working: %s", msg)
		}
		return ident.Models
	}
	if _, ok := allowed()["echo"]; !ok {
		t.Fatalf("created with models [echo], allows %v", allowed())
	}
	mustCreate(t, a, keysPath+"/"+id, `{"rpm":5}`)
	if _, ok := allowed()["echo"]; !ok {
		t.Errorf("an update without models changed them: %v", allowed())
	}
	got := mustCreate(t, a, keysPath+"/"+id, `{"models":null}`)
	if m, _ := got["models"].([]any); len(m) != 0 {
		t.Errorf("after null the key shows models %v", got["models"])
	}
	if m := allowed(); m != nil {
		t.Errorf("after null the key allows only %v, want every alias", m)
	}
	for _, body := range []string{`{"models":"echo"}`, `{"models":[1]}`, `{"models":{}}`} {
		rec, m := adminCall(t, a, http.MethodPost, keysPath+"/"+id, body)
		e, _ := m["error"].(map[string]any)
		if msg, _ := e["message"].(string); rec.Code != 400 || !strings.HasPrefix(msg, "models:") {
			t.Errorf("%s: %d %q, want 400 naming models", body, rec.Code, msg)
		}
	}
}

// FuzzModelsField: an accepted models field is nil (every alias) or a
// non-empty list of text the ledger can store.
func FuzzModelsField(f *testing.F) {
	for _, s := range []string{`null`, `[]`, `["echo","claude"]`, `"echo"`, `[1]`, `["a\u0000b"]`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := []string{"before"}
		if modelsField(json.RawMessage(raw), &got) != "" {
			if len(got) != 1 || got[0] != "before" {
				t.Fatalf("a refused %q changed the list to %q", raw, got)
			}
			return
		}
		if got != nil && len(got) == 0 {
			t.Fatalf("%q accepted as an empty non-nil list", raw)
		}
		for _, m := range got {
			if !ledger.StorableText(m) {
				t.Fatalf("%q accepted unstorable %q", raw, m)
			}
		}
	})
}
