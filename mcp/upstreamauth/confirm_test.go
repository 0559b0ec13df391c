package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// TestSharedKeyConnectNeedsConfirmation (hostile review H1): a connect
// link made for a key of no one, opened by an admin (one GET, as a
// cross-site page could make their browser do), starts nothing: it shows
// a page that names the shared key and says every holder will act as the
// admin's account. Only the confirmation's POST starts the authorization,
// asking the authorization server for fresh consent. The admin then sees
// the key's grant on their page and revokes it; a person cannot.
func TestSharedKeyConnectNeedsConfirmation(t *testing.T) {
	_, st, _, b := fixture(t)
	ctx := context.Background()
	_, err := b.Token(ctx, "gh", "k:shared-ci", "")
	nc, _ := err.(*NotConnectedError)
	if nc == nil || nc.URL == "" {
		t.Fatalf("want a link: %v", err)
	}
	admin := &policy.Identity{KeyID: "root@corp", Person: "root@corp", Role: policy.RoleAdmin}
	link := strings.TrimPrefix(nc.URL, testPublic)
	w := serveAs(b, http.MethodGet, link, "", admin)
	page := w.Body.String()
	if w.Code != http.StatusOK || w.Header().Get("Location") != "" || !strings.Contains(page, "shared key shared-ci") || !strings.Contains(page, "every holder") {
		t.Fatalf("the link's GET: %d %q %s", w.Code, w.Header().Get("Location"), page)
	}
	if _, found, _ := st.MCPUpstreamToken(ctx, "gh", "k:shared-ci"); found {
		t.Fatal("a GET stored a grant")
	}
	// A POST without a link this gateway made starts nothing.
	if w := serveAs(b, http.MethodPost, Path+"start", `{"link":"forged"}`, admin); w.Code != http.StatusBadRequest {
		t.Fatalf("a forged start: %d %s", w.Code, w.Body)
	}
	to := startAs(t, b, link, admin)
	if u, _ := url.Parse(to); u.Query().Get("prompt") != "consent" {
		t.Fatalf("a shared key's authorization asks for no fresh consent: %s", to)
	}
	if w := serveAs(b, http.MethodGet, authorize(t, to, "root-at-gh"), "", admin); w.Code != http.StatusOK {
		t.Fatalf("callback %d %s", w.Code, w.Body)
	}
	// The admin's page lists the key's grant; a person's does not.
	w = serveAs(b, http.MethodGet, Path+"?format=json", "", admin)
	var out struct {
		KeyGrants []KeyGrant `json:"key_grants"`
	}
	if json.Unmarshal(w.Body.Bytes(), &out) != nil || len(out.KeyGrants) != 1 || out.KeyGrants[0].Key != "shared-ci" || out.KeyGrants[0].Server != "gh" {
		t.Fatalf("admin's list: %s", w.Body)
	}
	if w := serveAs(b, http.MethodGet, Path+"?format=json", "", signedIn("bob")); strings.Contains(w.Body.String(), "key_grants") {
		t.Fatalf("a person sees the keys' grants: %s", w.Body)
	}
	if w := serveAs(b, http.MethodGet, Path, "", admin); !strings.Contains(w.Body.String(), `data-unit="k:shared-ci"`) {
		t.Fatalf("admin's page lacks the key's revoke button: %s", w.Body)
	}
	// A person cannot revoke it; the admin can.
	if w := serveAs(b, http.MethodPost, Path+"disconnect/gh", `{"unit":"k:shared-ci"}`, signedIn("bob")); w.Code != http.StatusBadRequest {
		t.Fatalf("bob revoking a key's grant: %d %s", w.Code, w.Body)
	}
	if w := serveAs(b, http.MethodPost, Path+"disconnect/gh", `{"unit":"k:shared-ci"}`, admin); w.Code != http.StatusOK {
		t.Fatalf("admin revoking: %d %s", w.Code, w.Body)
	}
	if _, found, _ := st.MCPUpstreamToken(ctx, "gh", "k:shared-ci"); found {
		t.Fatal("the key's grant is still stored")
	}
}

// TestOwnConnectNeedsConfirmation: a person's own connect page is a GET
// that only shows what it would do; it names the server and "you".
func TestOwnConnectNeedsConfirmation(t *testing.T) {
	as := fakes.NewOAuthServer(resource)
	defer as.Close()
	st, _ := sqliteStore(t)
	b := newBroker(t, as, st, testclock.New(time.Now()))
	w := serveAs(b, http.MethodGet, Path+"server/gh", "", signedIn("bob"))
	if w.Code != http.StatusOK || w.Header().Get("Location") != "" || !strings.Contains(w.Body.String(), resource) || strings.Contains(w.Body.String(), "shared key") {
		t.Fatalf("own connect page: %d %s", w.Code, w.Body)
	}
	// Bob's confirmation cannot be posted by alice.
	m := confirmLink.FindStringSubmatch(w.Body.String())
	if w := serveAs(b, http.MethodPost, Path+"start", `{"link":"`+m[1]+`"}`, signedIn("alice")); w.Code != http.StatusForbidden {
		t.Fatalf("alice posting bob's confirmation: %d %s", w.Code, w.Body)
	}
}

// TestGrantBoundToServerIdentity (hostile review H2): a grant is bound
// to the server's URL, its configured authorization server and the site,
// not only its name: after a reload that points "gh" at another URL or
// authorization server, or on another site sharing the ledger and
// mcp_token_key, the stored token is not handed out; the person is asked
// to connect again.
func TestGrantBoundToServerIdentity(t *testing.T) {
	as, st, c, b1 := fixture(t)
	connect(t, b1, "bob", "bob-at-gh")
	ctx := context.Background()
	if _, err := b1.Token(ctx, "gh", "p:bob", ""); err != nil {
		t.Fatal(err)
	}
	for name, o := range map[string]Options{
		"another url":                  {Servers: []*modellist.MCPServer{{Name: "gh", URL: "https://attacker.example/mcp", Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: as.URL}}}},
		"another authorization server": {Servers: []*modellist.MCPServer{{Name: "gh", URL: resource, Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: "https://attacker.example"}}}},
		"another site":                 {Site: ":8443 host other.example", Servers: []*modellist.MCPServer{{Name: "gh", URL: resource, Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: as.URL}}}},
	} {
		o.Key, o.PublicURL, o.Now = testKey, testPublic, c.Now
		o.Store = func() ledger.MCPUpstreamTokenStore { return st }
		b2, err := New(o)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := b2.Token(ctx, "gh", "p:bob", "")
		var nc *NotConnectedError
		if tok != "" || !errors.As(err, &nc) || !strings.Contains(err.Error(), "another url") {
			t.Fatalf("%s: token %q, %v", name, tok, err)
		}
	}
}
