package identity

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
)

// TestMCPAuthCodeOnceAcrossInstances: two instances on one PostgreSQL
// ledger, sharing the client secret (so each accepts the other's sealed
// codes): a code exchanged on one is refused on the other, a refresh
// token renewed on the other is refused on the first, and a code sent to
// both at once is exchanged by one of them only.
func TestMCPAuthCodeOnceAcrossInstances(t *testing.T) {
	dsn := pgtest.FreshSchema(t) // skips without a server
	cfg := Config{Issuer: "http://127.0.0.1:1", ClientID: "gw", ClientSecret: "secret"}
	var hs [2]*Handler
	for i := range hs {
		s, err := ledger.OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		hs[i], _ = instance(t, cfg, s.(ledger.ControlStore), false)
	}
	verifier := oauth2.GenerateVerifier()
	grant := func(id string) string {
		now := time.Now()
		g := mcpGrant{ID: id, Person: Person{Subject: "s1", Email: "dana@example.com", Groups: []string{}}, ClientID: "mgc_client",
			Redirect: "http://localhost:5555/callback", Challenge: oauth2.S256ChallengeFromVerifier(verifier), Expires: now.Add(time.Minute), SignedIn: now}
		code, err := hs[0].seal.seal(codePurpose, g)
		if err != nil {
			t.Fatal(err)
		}
		return code
	}
	exchange := func(h *Handler, code string) (int, map[string]any) {
		w := serve(h, "POST", OAuthTokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "client_id": {"mgc_client"},
			"redirect_uri": {"http://localhost:5555/callback"}, "code_verifier": {verifier}}.Encode())
		return w.Code, decodeBody(t, w)
	}
	code := grant("g-across")
	st, tok := exchange(hs[0], code)
	refresh, _ := tok["refresh_token"].(string)
	if st != http.StatusOK || refresh == "" {
		t.Fatalf("exchange on the first instance: %d %v", st, tok)
	}
	if st, m := exchange(hs[1], code); st != http.StatusBadRequest || m["error"] != "invalid_grant" || !strings.Contains(m["error_description"].(string), "already used") {
		t.Fatalf("the same code on the second instance: %d %v", st, m)
	}
	renew := func(h *Handler) (int, map[string]any) {
		w := serve(h, "POST", OAuthTokenPath, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"mgc_client"}}.Encode())
		return w.Code, decodeBody(t, w)
	}
	if st, m := renew(hs[1]); st != http.StatusOK {
		t.Fatalf("refresh on the second instance: %d %v", st, m)
	}
	if st, m := renew(hs[0]); st != http.StatusBadRequest || m["error"] != "invalid_grant" {
		t.Fatalf("the same refresh token on the first instance: %d %v", st, m)
	}

	race := grant("g-race")
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for _, h := range hs {
		wg.Go(func() {
			if st, _ := exchange(h, race); st == http.StatusOK {
				mu.Lock()
				won++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if won != 1 {
		t.Fatalf("a code sent to both instances at once was exchanged %d times", won)
	}
}
