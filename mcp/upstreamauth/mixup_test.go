package upstreamauth

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
)

// TestMixUpCodeNeverSentToAnotherServer (hostile review H3): the
// authorization server of one auth: oauth entry ("evil") bounces a
// person's browser to another entry's honest authorization server with
// the gateway's honest client_id, its own state and the gateway's PKCE
// challenge, the answer's iss dropped (as from a server without RFC
// 9207). With one redirect URI per server, the honest server refuses a
// redirect URI it did not register for that client; bounced with the
// honest server's own redirect URI, the answer arrives at that server's
// callback with evil's state and is refused there. Either way evil's
// token endpoint never sees a code or a verifier.
func TestMixUpCodeNeverSentToAnotherServer(t *testing.T) {
	honest := fakes.NewOAuthServer(resource)
	defer honest.Close()
	var mu sync.Mutex
	var stolenCode string
	var gwClient, gwRedirect string
	evil := httptest.NewServer(nil)
	defer evil.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"issuer": evil.URL, "authorization_endpoint": evil.URL + "/authorize", "token_endpoint": evil.URL + "/token", "code_challenge_methods_supported": []string{"S256"}})
	})
	mux.HandleFunc("GET /authorize", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		mu.Lock()
		redirect := q.Get("redirect_uri")
		v := url.Values{"response_type": {"code"}, "client_id": {gwClient}, "redirect_uri": {redirect}, "state": {q.Get("state")},
			"code_challenge": {q.Get("code_challenge")}, "code_challenge_method": {"S256"}, "resource": {resource}}
		if gwRedirect != "" {
			v.Set("redirect_uri", gwRedirect)
		}
		mu.Unlock()
		http.Redirect(w, r, honest.URL+"/authorize?"+v.Encode(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		stolenCode = r.PostForm.Get("code")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		_, _ = w.Write([]byte(`{"error":"temporarily_unavailable"}`))
	})
	evil.Config.Handler = mux
	st, _ := sqliteStore(t)
	c := testclock.New(time.Now())
	b, err := New(Options{
		Servers: []*modellist.MCPServer{
			{Name: "gh", URL: resource, Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: honest.URL}},
			{Name: "evil", URL: "http://127.0.0.1:2/mcp", Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: evil.URL, ClientID: "x"}},
		},
		Key: testKey, PublicURL: testPublic, Now: c.Now,
		Store: func() ledger.MCPUpstreamTokenStore { return st },
	})
	if err != nil {
		t.Fatal(err)
	}
	bob := signedIn("bob")
	// The gateway's client_id and redirect URI at the honest server are
	// visible in any person's authorization URL.
	ghURL, _ := url.Parse(startAs(t, b, Path+"server/gh", bob))
	mu.Lock()
	gwClient = ghURL.Query().Get("client_id")
	mu.Unlock()
	browse := func() *http.Response {
		req, _ := http.NewRequest(http.MethodGet, startAs(t, b, Path+"server/evil", bob), nil)
		hc := &http.Client{CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if strings.HasPrefix(r.URL.String(), testPublic) {
				return http.ErrUseLastResponse
			}
			r.AddCookie(&http.Cookie{Name: fakes.OAuthUserCookie, Value: "bob-at-gh"})
			return nil
		}}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	// Bounced with evil's own redirect URI: the honest server refuses it.
	if resp := browse(); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("the honest server answered a redirect URI it did not register: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Bounced with the honest server's redirect URI: the answer reaches
	// gh's callback carrying evil's state, and is refused.
	mu.Lock()
	gwRedirect = ghURL.Query().Get("redirect_uri")
	mu.Unlock()
	resp := browse()
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(back.Path, Path+"callback/gh") || back.Query().Get("code") == "" {
		t.Fatalf("the bounce did not come back with a code: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	q := back.Query()
	q.Del("iss")
	w := serveAs(b, http.MethodGet, back.Path+"?"+q.Encode(), "", bob)
	mu.Lock()
	defer mu.Unlock()
	if w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "another MCP server") || stolenCode != "" {
		t.Fatalf("mix-up: callback %d %s; evil's token endpoint got code %q", w.Code, w.Body, stolenCode)
	}
}

// TestMissingIssRefusedWhenAdvertised (hostile review H4): an
// authorization server whose metadata says
// authorization_response_iss_parameter_supported (the fake's does)
// answers without iss: the callback refuses it and stores nothing.
func TestMissingIssRefusedWhenAdvertised(t *testing.T) {
	as := fakes.NewOAuthServer(resource)
	defer as.Close()
	st, _ := sqliteStore(t)
	b := newBroker(t, as, st, testclock.New(time.Now()))
	cb := authorize(t, startAs(t, b, Path+"server/gh", signedIn("bob")), "bob-at-gh")
	u, _ := url.Parse(cb)
	q := u.Query()
	q.Del("iss")
	if w := serve(b, http.MethodGet, u.Path+"?"+q.Encode(), "bob"); w.Code != http.StatusBadRequest || !strings.Contains(w.Body.String(), "lacks iss") {
		t.Fatalf("an answer without iss: %d %s", w.Code, w.Body)
	}
	if _, found, _ := st.MCPUpstreamToken(t.Context(), "gh", "p:bob"); found {
		t.Fatal("stored a grant from an answer without iss")
	}
}
