package integration

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSCIMDeleteStopsSignIn: after the IdP deletes bob over SCIM, his
// key is revoked, his open dashboard session is refused, and signing in
// again (device flow from the CLI, and the dashboard in a browser) is
// refused as for a deactivated person, though the provider still signs
// him in. Provisioning him again lets him sign in again, with a new key;
// the old one stays revoked.
func TestSCIMDeleteStopsSignIn(t *testing.T) {
	s := startIdentityWith(t, identityOptions{authExtra: "scim_token {env.SCIM_TOKEN}", env: []string{"SCIM_TOKEN=" + scimToken}})
	g := s.g
	provision := func() string {
		t.Helper()
		status, out := scimCall(t, g, "POST", "/scim/v2/Users", scimToken,
			`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"bob@example.com","externalId":"bob","active":true}`)
		var u struct {
			ID string `json:"id"`
		}
		if status != http.StatusCreated || json.Unmarshal(out, &u) != nil {
			t.Fatalf("provisioning bob: %d %s", status, out)
		}
		return u.ID
	}
	id := provision()
	home := t.TempDir()
	cliLogin(t, s, home, "bob")
	key := printKey(t, home)
	if st, body := chat(t, g, key); st != http.StatusOK {
		t.Fatalf("bob's key before the delete: %d %s", st, body)
	}
	session := dashboardSignIn(t, s, "bob")

	if status, out := scimCall(t, g, "DELETE", "/scim/v2/Users/"+id, scimToken, ""); status != http.StatusNoContent {
		t.Fatalf("DELETE bob: %d %s", status, out)
	}
	if st, body := chat(t, g, key); st != http.StatusUnauthorized {
		t.Errorf("bob's key after the delete: %d %s, want 401", st, body)
	}
	// The directory view sign-in reads is at most 2 s old.
	deadline := time.Now().Add(5 * time.Second)
	for {
		st, me := session.call(http.MethodGet, g.base+"/v1/me", "")
		if st == http.StatusForbidden && strings.Contains(errMessage(me), "deleted from the user directory") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's dashboard session 5 s after the delete: %d %v", st, me)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, err := cliLoginResult(t, s, t.TempDir(), "bob"); err == nil || !strings.Contains(out, "deleted from the user directory") {
		t.Errorf("device sign-in after the delete: %v\n%s", err, out)
	}
	b := newBrowserless(t)
	b.visit(http.MethodGet, g.base+"/auth/oidc/login?return=/ui/", nil)
	b.signIn(s.issuer, "bob")
	if b.status != http.StatusForbidden || !strings.Contains(b.body, "deleted from the user directory") {
		t.Errorf("browser sign-in after the delete ended at %s: %d %.300s", b.last, b.status, b.body)
	}

	provision()
	// Once the directory view sign-in reads has him again, his session
	// cookie (never signed out) is accepted again, as after reactivation.
	for deadline := time.Now().Add(5 * time.Second); ; {
		st, me := session.call(http.MethodGet, g.base+"/v1/me", "")
		if st == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob's session 5 s after he was provisioned again: %d %v", st, me)
		}
		time.Sleep(100 * time.Millisecond)
	}
	again := t.TempDir()
	cliLogin(t, s, again, "bob")
	if st, body := chat(t, g, printKey(t, again)); st != http.StatusOK {
		t.Errorf("bob's new key once provisioned again: %d %s", st, body)
	}
	if st, _ := chat(t, g, key); st != http.StatusUnauthorized {
		t.Errorf("bob's old key once provisioned again: %d, want it still revoked", st)
	}
}
