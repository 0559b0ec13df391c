package identity

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coreos/go-oidc/v3/oidc/oidctest"
	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/policy"
)

// TestIDTokenChecks: an ID token that is expired, for another client,
// signed by another key, or carrying another nonce is refused with an
// error naming what failed (the callback answers it with a 401).
func TestIDTokenChecks(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	idp := &oidctest.Server{PublicKeys: []oidctest.PublicKey{{PublicKey: key.Public(), KeyID: "k1", Algorithm: "RS256"}}}
	srv := httptest.NewServer(idp)
	defer srv.Close()
	idp.SetIssuer(srv.URL)
	h, err := New(Config{Issuer: srv.URL, ClientID: "gw", ClientSecret: "s", Groups: Groups{{Name: "eng"}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.provider(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claimsVerified := func(aud string, exp time.Time, nonce, verified string) string {
		return fmt.Sprintf(`{"iss":%q,"aud":%q,"sub":"u1","email":"u1@example.com",%s"groups":["eng"],"nonce":%q,"iat":%d,"exp":%d}`,
			srv.URL, aud, verified, nonce, now.Add(-time.Minute).Unix(), exp.Unix())
	}
	claims := func(aud string, exp time.Time, nonce string) string {
		return claimsVerified(aud, exp, nonce, `"email_verified":true,`)
	}
	tok := func(raw string) *oauth2.Token {
		return (&oauth2.Token{AccessToken: "at"}).WithExtra(map[string]any{"id_token": raw})
	}
	good := oidctest.SignIDToken(key, "k1", "RS256", claims("gw", now.Add(time.Hour), "n1"))
	person, _, err := h.person(context.Background(), p, tok(good), "n1", true)
	if err != nil || person.ID() != "u1@example.com" || strings.Join(person.Groups, ",") != "eng" || person.StableID() != srv.URL+" u1" {
		t.Fatalf("a good ID token: %+v, %v", person, err)
	}
	// An email the provider did not verify does not name the person: they
	// are their subject (hostile review 4, finding 9).
	for _, verified := range []string{``, `"email_verified":false,`, `"email_verified":"false",`} {
		raw := oidctest.SignIDToken(key, "k1", "RS256", claimsVerified("gw", now.Add(time.Hour), "n1", verified))
		if person, _, err := h.person(context.Background(), p, tok(raw), "n1", true); err != nil || person.ID() != "u1" || person.Email != "" {
			t.Errorf("email_verified %q: %+v, %v; want the subject u1", verified, person, err)
		}
	}
	for _, verified := range []string{`"email_verified":"true",`, `"xms_edov":true,`} {
		raw := oidctest.SignIDToken(key, "k1", "RS256", claimsVerified("gw", now.Add(time.Hour), "n1", verified))
		if person, _, err := h.person(context.Background(), p, tok(raw), "n1", true); err != nil || person.ID() != "u1@example.com" {
			t.Errorf(`%s: %+v, %v`, verified, person, err)
		}
	}
	for _, tc := range []struct{ name, raw, nonce, want string }{
		{"expired", oidctest.SignIDToken(key, "k1", "RS256", claims("gw", now.Add(-time.Minute), "n1")), "n1", "expired"},
		{"another client", oidctest.SignIDToken(key, "k1", "RS256", claims("someone-else", now.Add(time.Hour), "n1")), "n1", "audience"},
		{"another key", oidctest.SignIDToken(other, "k1", "RS256", claims("gw", now.Add(time.Hour), "n1")), "n1", "signature"},
		{"another nonce", good, "n2", "nonce"},
		{"garbage", "not.a.jwt", "n1", "ID token"},
	} {
		_, _, err := h.person(context.Background(), p, tok(tc.raw), tc.nonce, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if _, _, err := h.person(context.Background(), p, &oauth2.Token{AccessToken: "at"}, "n1", true); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("a token answer without an ID token: %v", err)
	}
}

// TestStatusNoticesOutage: a provider that goes down after discovery is
// shown as down on the status the dashboard reads.
func TestStatusNoticesOutage(t *testing.T) {
	idp := &oidctest.Server{}
	srv := httptest.NewServer(idp)
	idp.SetIssuer(srv.URL)
	h, err := New(Config{Issuer: srv.URL, ClientID: "gw", Name: "Acme SSO"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Now()
	h.now = func() time.Time { return clock }
	status := func(id *policy.Identity) string {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", StatusPath, nil)
		if id != nil {
			r = r.WithContext(policy.WithIdentity(r.Context(), id))
		}
		h.ServeHTTP(w, r)
		return w.Body.String()
	}
	if s := status(nil); !strings.Contains(s, `"ready":true`) {
		t.Fatalf("status with the provider up: %s", s)
	}
	srv.Close()
	clock = clock.Add(retryDiscovery + time.Second)
	// An admin is told why; anyone else only that sign-in is unavailable,
	// never the provider's address or the dial error.
	if s := status(&policy.Identity{KeyID: "root", Role: policy.RoleAdmin}); !strings.Contains(s, `"ready":false`) || !strings.Contains(s, "does not answer") {
		t.Errorf("status after the provider went down, to an admin: %s", s)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	for _, id := range []*policy.Identity{nil, {KeyID: "alice", Role: policy.RoleUser}} {
		if s := status(id); !strings.Contains(s, `"ready":false`) || !strings.Contains(s, "unavailable") || strings.Contains(s, host) ||
			strings.Contains(s, "does not answer") || !strings.Contains(s, `"name":"Acme SSO"`) {
			t.Errorf("status after the provider went down, to %v: %s", id, s)
		}
	}
}
