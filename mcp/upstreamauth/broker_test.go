package upstreamauth

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

const (
	testKey    = "0123456789abcdef0123456789abcdef-test"
	testPublic = "https://gw.example"
	resource   = "http://127.0.0.1:1/mcp"
)

func sqliteStore(t *testing.T) (ledger.MCPUpstreamTokenStore, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := ledger.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(ledger.MCPUpstreamTokenStore), path
}

func newBroker(t *testing.T, as *fakes.OAuthServer, st ledger.MCPUpstreamTokenStore, c *testclock.Clock, client ...string) *Broker {
	t.Helper()
	o := &modellist.MCPOAuth{AuthorizationServer: as.URL}
	if len(client) == 2 {
		o.ClientID, o.ClientSecret = client[0], client[1]
	}
	b, err := New(Options{
		Servers: []*modellist.MCPServer{{Name: "gh", URL: resource, Auth: modellist.MCPAuthOAuth, OAuth: o}},
		Key:     testKey, PublicURL: testPublic, Now: c.Now,
		Store: func() ledger.MCPUpstreamTokenStore { return st },
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixture is a fake authorization server, a SQLite token store, a test
// clock and a broker over them.
func fixture(t *testing.T) (*fakes.OAuthServer, ledger.MCPUpstreamTokenStore, *testclock.Clock, *Broker) {
	t.Helper()
	as := fakes.NewOAuthServer(resource)
	t.Cleanup(as.Close)
	st, _ := sqliteStore(t)
	c := testclock.New(time.Now())
	return as, st, c, newBroker(t, as, st, c)
}

// serve runs one request through b's handler as person (a dashboard
// session); it returns the answer.
func serve(b *Broker, method, target, person string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, nil)
	if person != "" {
		r = r.WithContext(policy.WithIdentity(r.Context(), &policy.Identity{KeyID: person, Person: person}))
	}
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	return w
}

// confirmLink is the sealed link a confirmation page's button posts.
var confirmLink = regexp.MustCompile(`data-link="([A-Za-z0-9_-]+)"`)

// startAs opens target (a connect page or link) as id, checks it is a
// confirmation page that starts nothing, posts its confirmation and
// returns the authorization URL the answer sends the browser to.
func startAs(t *testing.T, b *Broker, target string, id *policy.Identity) string {
	t.Helper()
	w := confirmAs(t, b, target, id)
	var out struct {
		Redirect string `json:"redirect"`
	}
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &out) != nil || out.Redirect == "" {
		t.Fatalf("confirming: %d %s", w.Code, w.Body)
	}
	return out.Redirect
}

// confirmAs opens target as id and posts its confirmation; it returns
// the POST's answer.
func confirmAs(t *testing.T, b *Broker, target string, id *policy.Identity) *httptest.ResponseRecorder {
	t.Helper()
	w := serveAs(b, http.MethodGet, target, "", id)
	m := confirmLink.FindStringSubmatch(w.Body.String())
	if w.Code != http.StatusOK || w.Header().Get("Location") != "" || m == nil {
		t.Fatalf("connect page: %d %q %s", w.Code, w.Header().Get("Location"), w.Body)
	}
	return serveAs(b, http.MethodPost, Path+"start", `{"link":"`+m[1]+`"}`, id)
}

// serveAs runs one request with body through b's handler as id.
func serveAs(b *Broker, method, target, body string, id *policy.Identity) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	if id != nil {
		r = r.WithContext(policy.WithIdentity(r.Context(), id))
	}
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	return w
}

// signedIn is a signed-in person's dashboard identity.
func signedIn(name string) *policy.Identity { return &policy.Identity{KeyID: name, Person: name} }

// authorize follows the authorization URL to the fake authorization
// server as user and returns the callback URL it sends the browser to.
func authorize(t *testing.T, to, user string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, to, nil)
	req.AddCookie(&http.Cookie{Name: fakes.OAuthUserCookie, Value: user})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, testPublic+Path+"callback") || !strings.Contains(loc, "code=") {
		t.Fatalf("authorize answered %d to %q", resp.StatusCode, loc)
	}
	return strings.TrimPrefix(loc, testPublic)
}

// connect runs the whole flow for person, whose account at the
// authorization server is user.
func connect(t *testing.T, b *Broker, name, user string) {
	t.Helper()
	cb := authorize(t, startAs(t, b, Path+"server/gh", signedIn(name)), user)
	if w := serve(b, http.MethodGet, cb, name); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), "Connected") {
		t.Fatalf("callback: %d %s", w.Code, w.Body)
	}
}

// TestConnectFlow: registration, code with PKCE and resource, the tokens
// stored sealed per person; each person gets their own; a link forwarded
// to someone else, a replayed callback and someone else's callback are
// refused; the ledger holds no token in the clear.
func TestConnectFlow(t *testing.T) {
	as := fakes.NewOAuthServer(resource)
	defer as.Close()
	st, path := sqliteStore(t)
	c := testclock.New(time.Now())
	b := newBroker(t, as, st, c)
	ctx := context.Background()

	_, err := b.Token(ctx, "gh", "p:bob", "")
	var nc *NotConnectedError
	if !errors.As(err, &nc) || !strings.HasPrefix(nc.URL, testPublic+Path+"link/") || !strings.Contains(nc.Error(), `"gh"`) {
		t.Fatalf("before connecting: %v", err)
	}
	// The link names bob: alice's session cannot use it.
	link := strings.TrimPrefix(nc.URL, testPublic)
	if w := serve(b, http.MethodGet, link, "alice@example.com"); w.Code != http.StatusForbidden {
		t.Fatalf("alice opening bob's link: %d %s", w.Code, w.Body)
	}
	if w := serve(b, http.MethodGet, link, ""); w.Code != http.StatusUnauthorized {
		t.Fatalf("no session: %d", w.Code)
	}
	cb := authorize(t, startAs(t, b, link, signedIn("bob")), "bob-at-gh")
	if w := serve(b, http.MethodGet, cb, "alice@example.com"); w.Code != http.StatusForbidden {
		t.Fatalf("alice completing bob's sign-in: %d %s", w.Code, w.Body)
	}
	if w := serve(b, http.MethodGet, cb, "bob"); w.Code != http.StatusOK {
		t.Fatalf("callback: %d %s", w.Code, w.Body)
	}
	if w := serve(b, http.MethodGet, cb, "bob"); w.Code != http.StatusConflict {
		t.Fatalf("replayed callback: %d %s", w.Code, w.Body)
	}
	connect(t, b, "alice@example.com", "alice-at-gh")

	for person, user := range map[string]string{"bob": "bob-at-gh", "alice@example.com": "alice-at-gh"} {
		tok, err := b.Token(ctx, "gh", "p:"+person, "")
		if who, ok := as.Who(tok); err != nil || !ok || who != user {
			t.Fatalf("%s's token is %q's (%v)", person, who, err)
		}
	}
	conns, err := b.Connections(ctx, "p:bob")
	if err != nil || len(conns) != 1 || !conns[0].Connected {
		t.Fatalf("bob's connections %+v %v", conns, err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range as.Issued() {
		if strings.Contains(string(raw), tok) {
			t.Fatal("a token is in the ledger in the clear")
		}
	}
	// Disconnect forgets the grant.
	r := httptest.NewRequest(http.MethodPost, Path+"disconnect/gh", nil)
	r = r.WithContext(policy.WithIdentity(r.Context(), &policy.Identity{Person: "bob"}))
	w := httptest.NewRecorder()
	b.ServeHTTP(w, r)
	if _, err := b.Token(ctx, "gh", "p:bob", ""); w.Code != http.StatusOK || !errors.As(err, &nc) {
		t.Fatalf("after disconnect: %d %v", w.Code, err)
	}
}

// TestConfiguredClient: a client_id and client_secret of the operator's
// are used instead of registering, the secret sent as HTTP Basic on the
// code exchange and on refresh.
func TestConfiguredClient(t *testing.T) {
	as := fakes.NewOAuthServer(resource)
	defer as.Close()
	as.AddClient("modelgate", "s3cret", testPublic+Path+"callback/gh")
	st, _ := sqliteStore(t)
	c := testclock.New(time.Now())
	b := newBroker(t, as, st, c, "modelgate", "s3cret")
	connect(t, b, "bob", "bob-at-gh")
	c.Advance(2 * time.Hour)
	tok, err := b.Token(context.Background(), "gh", "p:bob", "")
	if who, ok := as.Who(tok); err != nil || !ok || who != "bob-at-gh" {
		t.Fatalf("renewed with the configured client: %q %v", who, err)
	}
	// A wrong secret: the exchange is refused with the server's error
	// code, and nothing of the client's secret is shown.
	wrong := newBroker(t, as, st, c, "modelgate", "wrong-s3cret")
	cb := authorize(t, startAs(t, wrong, Path+"server/gh", signedIn("alice")), "alice-at-gh")
	if w := serve(wrong, http.MethodGet, cb, "alice"); w.Code != http.StatusBadGateway || !strings.Contains(w.Body.String(), "invalid_client") || strings.Contains(w.Body.String(), "s3cret") {
		t.Fatalf("a wrong client secret: %d %s", w.Code, w.Body)
	}
}

// TestKeyUnit: a key of no one connects through an admin's session only.
func TestKeyUnit(t *testing.T) {
	if Unit(&policy.Identity{KeyID: "ci"}) != "k:ci" || Unit(&policy.Identity{KeyID: "k1", Owner: "bob"}) != "p:bob" {
		t.Fatal("units")
	}
	if mayAct(&policy.Identity{Person: "bob"}, "k:ci") || !mayAct(&policy.Identity{Person: "root", Role: policy.RoleAdmin}, "k:ci") {
		t.Fatal("who may connect a key")
	}
}

// TestRefresh: an expired token is renewed with the refresh token, once
// for many concurrent callers on two instances sharing the ledger (the
// rotated refresh token is never lost); a token the server rejects is
// renewed at once; a grant the server no longer renews asks the person
// to connect again.
func TestRefresh(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, _ := sqliteStore(t)
		testRefresh(t, st, st)
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.FreshSchema(t)
		testRefresh(t, pgTokenStore(t, dsn), pgTokenStore(t, dsn))
	})
}

// pgTokenStore opens the PostgreSQL ledger at dsn on its own connection
// pool, as another instance would.
func pgTokenStore(t *testing.T, dsn string) ledger.MCPUpstreamTokenStore {
	s, err := ledger.OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(ledger.MCPUpstreamTokenStore)
}

func testRefresh(t *testing.T, one, two ledger.MCPUpstreamTokenStore) {
	as := fakes.NewOAuthServer(resource)
	defer as.Close()
	c := testclock.New(time.Now())
	b1, b2 := newBroker(t, as, one, c), newBroker(t, as, two, c)
	connect(t, b1, "bob", "bob-at-gh")
	ctx := context.Background()
	first, err := b2.Token(ctx, "gh", "p:bob", "")
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Hour)
	as.ExpireAll()
	var wg sync.WaitGroup
	got := make([]string, 16)
	errs := make([]error, 16)
	for i := range got {
		b := b1
		if i%2 == 1 {
			b = b2
		}
		wg.Go(func() { got[i], errs[i] = b.Token(ctx, "gh", "p:bob", "") })
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] || got[i] == first {
			t.Fatalf("caller %d: %q %v (first %q)", i, got[i], errs[i], got[0])
		}
	}
	if who, ok := as.Who(got[0]); !ok || who != "bob-at-gh" {
		t.Fatalf("renewed token is %q's", who)
	}
	if served, reused := as.Refreshes(); served != 1 || reused != 0 {
		t.Fatalf("refreshes %d, spent tokens reused %d; want 1, 0", served, reused)
	}
	// The server refused the token: renewed at once, though not expired.
	again, err := b1.Token(ctx, "gh", "p:bob", got[0])
	if err != nil || again == got[0] {
		t.Fatalf("after a rejection: %q %v", again, err)
	}
	// The rotated refresh token was kept: a second expiry renews again.
	c.Advance(2 * time.Hour)
	if third, err := b2.Token(ctx, "gh", "p:bob", ""); err != nil || third == again {
		t.Fatalf("second renewal: %v", err)
	}
	if served, reused := as.Refreshes(); served != 3 || reused != 0 {
		t.Fatalf("refreshes %d, reused %d; want 3, 0", served, reused)
	}
	// A grant the server forgot: connect again.
	as.Close()
	as2 := fakes.NewOAuthServer(resource)
	defer as2.Close()
	b3 := newBroker(t, as2, one, c)
	row, _, _ := one.MCPUpstreamToken(ctx, "gh", "p:bob")
	set, _ := b1.openSet("gh", "p:bob", row.Sealed)
	set.TokenURL = as2.URL + "/token"
	sealed, _ := b3.sealSet("gh", "p:bob", set)
	if _, err := one.PutMCPUpstreamToken(ctx, ledger.MCPUpstreamToken{Server: "gh", Unit: "p:bob", Sealed: sealed, ExpiresAt: set.Expiry, UpdatedAt: c.Now()}); err != nil {
		t.Fatal(err)
	}
	c.Advance(2 * time.Hour)
	var nc *NotConnectedError
	if _, err := b3.Token(ctx, "gh", "p:bob", ""); !errors.As(err, &nc) || !strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("a forgotten grant: %v", err)
	}
	if _, found, _ := one.MCPUpstreamToken(ctx, "gh", "p:bob"); found {
		t.Fatal("the dead grant is still stored")
	}
}

// TestSealedRowsBound: a row's ciphertext opens only for its own server
// and person, and not under another key.
func TestSealedRowsBound(t *testing.T) {
	s, _ := newSealer(testKey)
	other, _ := newSealer(testKey + "x")
	sealed, _ := s.sealTokens("gh", "p:bob", "u", tokenSet{Access: "a"})
	if _, err := s.openTokens("gh", "p:bob", "u", sealed); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		s                  *sealer
		server, unit, bind string
	}{{s, "gh", "p:alice", "u"}, {s, "linear", "p:bob", "u"}, {s, "gh", "p:bob", "elsewhere"}, {other, "gh", "p:bob", "u"}} {
		if _, err := c.s.openTokens(c.server, c.unit, c.bind, sealed); err == nil {
			t.Fatalf("opened as %s %s", c.server, c.unit)
		}
	}
	if _, err := newSealer("short"); err == nil || !strings.Contains(err.Error(), "openssl rand") {
		t.Fatalf("short key: %v", err)
	}
	var l link
	if open(s.links, stateAD, url.QueryEscape(sealed), &l) == nil {
		t.Fatal("a token row opened as a state")
	}
}
