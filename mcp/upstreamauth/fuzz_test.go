package upstreamauth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// FuzzOpenSealed: the decoder of links, OAuth states, token rows and
// registered clients opens
// only what its own key sealed for that use and that server and person;
// any other text is refused, never a panic.
func FuzzOpenSealed(f *testing.F) {
	s, _ := newSealer(testKey)
	good, _ := seal(s.links, linkAD, link{Server: "gh", Unit: "p:bob", Expires: time.Unix(1e9, 0), Nonce: "n"})
	row, _ := s.sealTokens("gh", "p:bob", "u", tokenSet{Access: "a", Refresh: "r"})
	client, _ := seal(s.tokens, clientAD("gh", "c:i x", "u"), registeredClient{ID: "cid"})
	f.Add(good)
	f.Add(row)
	f.Add(client)
	f.Add("")
	f.Add("AAAA")
	f.Add(strings.Repeat("A", 60))
	f.Fuzz(func(t *testing.T, text string) {
		var l link
		// A worker process seals its own seeds again (new nonces): what
		// opens must be what the test sealed, never anything else.
		if open(s.links, linkAD, text, &l) == nil && (l.Server != "gh" || l.Unit != "p:bob" || l.Nonce != "n") {
			t.Fatalf("opened a link nobody sealed: %q", text)
		}
		var st state
		if open(s.links, stateAD, text, &st) == nil {
			t.Fatalf("opened a state nobody sealed: %q", text)
		}
		if set, err := s.openTokens("gh", "p:bob", "u", text); err == nil && (set.Access != "a" || set.Refresh != "r") {
			t.Fatalf("opened a token row nobody sealed: %+v", set)
		}
		var c registeredClient
		if open(s.tokens, clientAD("gh", "c:i x", "u"), text, &c) == nil && c.ID != "cid" {
			t.Fatalf("opened a client nobody sealed: %+v", c)
		}
		// A client's row is no token row, and a token row no client's.
		if _, err := s.openTokens("gh", "c:i x", "u", text); err == nil {
			t.Fatalf("a client's row opened as tokens: %q", text)
		}
	})
}

// FuzzCallback: whatever query the authorization server (or anyone) sends
// the callback, it answers a page and stores nothing without a state the
// gateway sealed.
func FuzzCallback(f *testing.F) {
	f.Add("code=c&state=s")
	f.Add("error=access_denied&state=")
	f.Add("state=%ZZ&iss=http://x")
	f.Add("code=" + strings.Repeat("x", 5000))
	st := &countingStore{}
	b, err := New(Options{
		Servers: []*modellist.MCPServer{{Name: "gh", URL: resource, Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{}}},
		Key:     testKey, PublicURL: testPublic,
		Store: func() ledger.MCPUpstreamTokenStore { return st },
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, query string) {
		r := httptest.NewRequest(http.MethodGet, Path+"callback/gh", nil)
		r.URL.RawQuery = query
		r = r.WithContext(policy.WithIdentity(r.Context(), &policy.Identity{Person: "bob"}))
		w := httptest.NewRecorder()
		b.ServeHTTP(w, r)
		if w.Code == http.StatusOK || st.writes > 0 {
			t.Fatalf("query %q: %d, %d writes", query, w.Code, st.writes)
		}
	})
}

// countingStore is a token store that counts writes and has no rows.
type countingStore struct {
	ledger.MCPUpstreamTokenStore
	writes int
}

func (c *countingStore) UseMCPUpstreamLink(_ context.Context, nonce string, expires, now time.Time) (bool, error) {
	c.writes++
	return true, nil
}
