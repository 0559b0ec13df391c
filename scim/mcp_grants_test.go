package scim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestDeprovisionForgetsUpstreamGrants (hostile review H9): a person the
// IdP deactivates loses their upstream MCP grants (by email, any case),
// so a recycled address never inherits them; others keep theirs.
func TestDeprovisionForgetsUpstreamGrants(t *testing.T) {
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ts := store.(ledger.MCPUpstreamTokenStore)
	ctx := context.Background()
	for _, u := range []string{"p:dana@example.com", "p:erin@example.com"} {
		if _, err := ts.PutMCPUpstreamToken(ctx, ledger.MCPUpstreamToken{Server: "gh", Unit: u, Sealed: "x", UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	h, call := scimServerOn(t, store, nil)
	h.Keys = &fakeKeys{}
	do := func(method, path, body string) map[string]any {
		t.Helper()
		status, out := call(method, path, body)
		if status >= 300 {
			t.Fatalf("%s %s: %d %v", method, path, status, out)
		}
		return out
	}
	out := do("POST", "/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Dana@example.com","externalId":"00u1","active":true}`)
	uid, _ := out["id"].(string)
	do("PATCH", "/scim/v2/Users/"+uid, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`)
	if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", "p:dana@example.com"); found {
		t.Fatal("a deactivated person's upstream grant is still stored")
	}
	if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", "p:erin@example.com"); !found {
		t.Fatal("someone else's grant was removed")
	}
}
