package scim

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// grantsStore is a SQLite ledger holding a grant of server gh for each
// of units.
func grantsStore(t *testing.T, units ...string) (ledger.Store, ledger.MCPUpstreamTokenStore) {
	t.Helper()
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	ts := store.(ledger.MCPUpstreamTokenStore)
	for _, u := range units {
		if _, err := ts.PutMCPUpstreamToken(context.Background(), ledger.MCPUpstreamToken{Server: "gh", Unit: u, Sealed: "x", UpdatedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	return store, ts
}

// TestDeprovisionForgetsUpstreamGrants (hostile review H9): a person the
// IdP deactivates loses their upstream MCP grants (by email, any case),
// so a recycled address never inherits them; others keep theirs.
func TestDeprovisionForgetsUpstreamGrants(t *testing.T) {
	// Dana's grants by email (made before subjects were recorded) and by
	// her identity provider's (issuer, subject); the IdP's externalId is
	// her subject.
	store, ts := grantsStore(t, "p:dana@example.com", "s:https://idp.example 00u1", "p:erin@example.com", "s:https://idp.example 00u2")
	ctx := context.Background()
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
	for _, u := range []string{"p:dana@example.com", "s:https://idp.example 00u1"} {
		if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", u); found {
			t.Fatalf("a deactivated person's upstream grant %s is still stored", u)
		}
	}
	for _, u := range []string{"p:erin@example.com", "s:https://idp.example 00u2"} {
		if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", u); !found {
			t.Fatalf("someone else's grant %s was removed", u)
		}
	}
}

// TestDeprovisionForgetsGrantsBySubjectOfKeys: where the directory's
// externalId is not the ID token's subject (Entra ID's pairwise
// subjects), a person's grants keyed by (issuer, subject) still go with
// them: the subjects of the keys minted for them name the grants.
func TestDeprovisionForgetsGrantsBySubjectOfKeys(t *testing.T) {
	_, ts := grantsStore(t, "s:https://login.example/t/v2.0 pairwise-ada", "s:https://login.example/t/v2.0 pairwise-bob")
	ctx := context.Background()
	keys := ControlKeys{Store: &memKeys{keys: map[string]ledger.ControlKey{
		"k1": {ID: "k1", Status: "active", CreatedBy: &ledger.KeyCreator{Type: "oidc", ID: "ada@example.com", Email: "ada@example.com", Subject: "pairwise-ada", Issuer: "https://login.example/t/v2.0"}},
		"k2": {ID: "k2", Status: "active", CreatedBy: &ledger.KeyCreator{Type: "oidc", ID: "bob@example.com", Email: "bob@example.com", Subject: "pairwise-bob", Issuer: "https://login.example/t/v2.0"}},
	}}}
	if err := forgetUpstreamGrants(ctx, ts, keys, User{UserName: "Ada@example.com", ExternalID: "object-id-ada"}); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", "s:https://login.example/t/v2.0 pairwise-ada"); found {
		t.Fatal("the deprovisioned person's grant is still stored")
	}
	if _, found, _ := ts.MCPUpstreamToken(ctx, "gh", "s:https://login.example/t/v2.0 pairwise-bob"); !found {
		t.Fatal("someone else's grant was removed")
	}
}
