package policy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestIdentifyID: a key named by id is admitted as a request presenting
// its secret would be now: a Caddyfile key, an active runtime key with
// its models; a revoked, expired or unknown key, or one in an archived
// workspace, refused naming why.
func TestIdentifyID(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	c := NewControls(func() time.Time { return now })
	_ = c.RegisterStatic("", []*Identity{{KeyID: "alice", Workspace: "frontend", Role: RoleUser}}, []string{"frontend"}, nil)
	key := func(id, status, ws string, expires time.Time) ledger.ControlKey {
		return ledger.ControlKey{ID: id, SecretHash: secretHash(id), Status: status, WorkspaceID: ws, CreatedAt: now, UpdatedAt: now,
			ExpiresAt: expires, Limits: ledger.Limits{Models: []string{"local"}}}
	}
	c.SetStore(fixedStore{c: ledger.Controls{Version: 1,
		Keys: []ledger.ControlKey{key("apikey_ok", "active", "", time.Time{}), key("apikey_off", "inactive", "", time.Time{}),
			key("apikey_old", "active", "", now.Add(-time.Hour)), key("apikey_ws", "active", "wrkspc_gone", time.Time{})},
		Workspaces: []ledger.ControlWorkspace{{ID: "wrkspc_gone", Name: "gone", CreatedAt: now, UpdatedAt: now, ArchivedAt: now}}}})
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if id, e := c.IdentifyID("", "alice"); e != nil || id.Workspace != "frontend" {
		t.Errorf("Caddyfile key: %+v %v", id, e)
	}
	if id, e := c.IdentifyID("", "apikey_ok"); e != nil || !id.Runtime || !id.Allows("local") || id.Allows("other") {
		t.Errorf("runtime key: %+v %v", id, e)
	}
	for keyID, want := range map[string]string{"apikey_off": "is inactive", "apikey_old": "expired at", "apikey_ws": "archived", "nobody": "no longer configured"} {
		if _, e := c.IdentifyID("", keyID); e == nil || !strings.Contains(e.Message, want) || e.Status/100 != 4 {
			t.Errorf("%s: %v, want a refusal saying %q", keyID, e, want)
		}
	}
}

// TestStaticKeysPerSite: each site's llm_auth registers its own keys
// beside the other sites' (the second does not replace the first), a key
// id two sites share is each site's own key, runtime keys are every
// site's, and workspaces are one namespace whose limits two sites may not
// set differently.
func TestStaticKeysPerSite(t *testing.T) {
	c := NewControls(nil)
	budget := int64(100)
	if err := c.RegisterStatic(":8081", []*Identity{{KeyID: "alice", Role: RoleUser}, {KeyID: "bob", Workspace: "frontend", Role: RoleUser}},
		[]string{"frontend"}, map[string]ledger.Limits{"frontend": {BudgetCents: &budget}}); err != nil {
		t.Fatal(err)
	}
	if err := c.RegisterStatic(":8082", []*Identity{{KeyID: "carol", Role: RoleUser}, {KeyID: "bob", Workspace: "backend", Role: RoleUser}},
		[]string{"frontend", "backend"}, map[string]ledger.Limits{"frontend": {}, "backend": {RPM: 5}}); err != nil {
		t.Fatal(err)
	}
	c.SetStore(fixedStore{c: ledger.Controls{Version: 1, Keys: []ledger.ControlKey{{ID: "apikey_rt", SecretHash: secretHash("apikey_rt"), Status: "active"}}}})
	if err := c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if id, e := c.IdentifyID(":8081", "alice"); e != nil || id.KeyID != "alice" {
		t.Errorf("the first site's key after the second registered: %+v %v", id, e)
	}
	if _, e := c.IdentifyID(":8081", "carol"); e == nil {
		t.Error("the first site identifies the second site's carol")
	}
	if id, e := c.IdentifyID(":8082", "bob"); e != nil || id.Workspace != "backend" {
		t.Errorf("the second site's bob: %+v %v", id, e)
	}
	if id, e := c.IdentifyID(":8081", "bob"); e != nil || id.Workspace != "frontend" {
		t.Errorf("the first site's bob: %+v %v", id, e)
	}
	for _, site := range []string{":8081", ":8082"} {
		if id, e := c.IdentifyID(site, "apikey_rt"); e != nil || !id.Runtime {
			t.Errorf("runtime key on %s: %+v %v", site, id, e)
		}
	}
	keys, workspaces, _ := c.Static(":8082")
	if len(keys) != 2 || keys[0].KeyID != "carol" || strings.Join(workspaces, ",") != "frontend,backend" {
		t.Errorf("the second site's static: %v %v", keys, workspaces)
	}
	if l := c.WorkspaceLimits("frontend"); l.BudgetCents == nil || *l.BudgetCents != 100 {
		t.Errorf("frontend's limits, declared on the first site, implied on the second: %+v", l)
	}
	if l := c.WorkspaceLimits("backend"); l.RPM != 5 {
		t.Errorf("backend's limits: %+v", l)
	}
	err := c.RegisterStatic(":8083", nil, []string{"backend"}, map[string]ledger.Limits{"backend": {RPM: 9}})
	if err == nil || !strings.Contains(err.Error(), `workspace backend: site ":8083" gives it other limits than site ":8082"`) {
		t.Errorf("conflicting workspace limits: %v", err)
	}
}

// TestStaticElsewhere names the other sites declaring a key id.
func TestStaticElsewhere(t *testing.T) {
	c := NewControls(nil)
	_ = c.RegisterStatic("a", []*Identity{{KeyID: "bob"}, {KeyID: "alice"}}, nil, nil)
	_ = c.RegisterStatic("b", []*Identity{{KeyID: "bob"}}, nil, nil)
	if got := c.StaticElsewhere("b", "bob"); len(got) != 1 || got[0] != "a" {
		t.Errorf("bob elsewhere: %v", got)
	}
	if got := c.StaticElsewhere("a", "alice"); len(got) != 0 {
		t.Errorf("alice elsewhere: %v", got)
	}
}
