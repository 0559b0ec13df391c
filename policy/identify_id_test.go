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
