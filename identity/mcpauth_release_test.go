package identity

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestMCPRefreshNotBurnedByAnUnreachableProvider: a refresh token whose
// renewal at the provider fails because the provider does not answer is
// given back (503 temporarily_unavailable, retry), not burned: presented
// again it is not "already used" (a hostile review found a transient
// provider error logged the MCP client out). The answer names neither
// the provider nor its error.
func TestMCPRefreshNotBurnedByAnUnreachableProvider(t *testing.T) {
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h, _ := instance(t, Config{Issuer: "http://127.0.0.1:1", ClientID: "gw", ClientSecret: "secret"}, s.(ledger.ControlStore), false)
	now := time.Now()
	refresh, err := h.seal.seal(refreshPurpose, mcpGrant{ID: "g-idp", Person: Person{Subject: "s1", Email: "dana@example.com", Groups: []string{}},
		IdPRefresh: "idp-refresh", ClientID: "mgc_client", Expires: now.Add(time.Hour), SignedIn: now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		w := serve(h, "POST", OAuthTokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"mgc_client"}}.Encode())
		m := decodeBody(t, w)
		if w.Code != http.StatusServiceUnavailable || m["error"] != "temporarily_unavailable" || strings.Contains(w.Body.String(), "127.0.0.1") {
			t.Fatalf("attempt %d with the provider down: %d %v", i+1, w.Code, m)
		}
	}
	// Used once for real, it is refused after.
	ok, err := s.(ledger.GrantRedeemer).RedeemGrant(context.Background(), "refresh_tokeng-idp", now.Add(time.Hour), now)
	if err != nil || !ok {
		t.Fatalf("the released grant could not be redeemed: %v %v", ok, err)
	}
	w := serve(h, "POST", OAuthTokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"mgc_client"}}.Encode())
	if m := decodeBody(t, w); w.Code != http.StatusBadRequest || !strings.Contains(m["error_description"].(string), "already used") {
		t.Fatalf("a used refresh token: %d %v", w.Code, m)
	}
}
