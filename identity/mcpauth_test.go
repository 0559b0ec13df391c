package identity

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// mcpHandler is a relying party over a fresh SQLite key store; its
// provider is never reached by these tests.
func mcpHandler(t *testing.T) *Handler {
	t.Helper()
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h, _ := instance(t, Config{Issuer: "http://127.0.0.1:1", ClientID: "gw", ClientSecret: "secret"}, s.(ledger.ControlStore), false)
	return h
}

func serve(h *Handler, method, target, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, target, strings.NewReader(body))
	r.Host = "gw.test"
	if body != "" && strings.HasPrefix(body, "{") {
		r.Header.Set("Content-Type", "application/json")
	} else if body != "" {
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func decodeBody(t *testing.T, w *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
		t.Fatalf("answer %d is not JSON: %s", w.Code, w.Body)
	}
	return m
}

func TestMCPAuthMetadata(t *testing.T) {
	h := mcpHandler(t)
	m := decodeBody(t, serve(h, "GET", AuthorizationServerPath, ""))
	if m["issuer"] != "http://gw.test" || m["token_endpoint"] != "http://gw.test"+OAuthTokenPath || m["registration_endpoint"] != "http://gw.test"+RegisterPath {
		t.Fatalf("authorization server metadata %v", m)
	}
	prm := decodeBody(t, serve(h, "GET", ProtectedResourcePath+"/mcp", ""))
	if prm["resource"] != "http://gw.test/mcp" || jsonString(prm["authorization_servers"]) != `["http://gw.test"]` {
		t.Fatalf("protected resource metadata %v", prm)
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", "/mcp/github", nil)
	r.Host = "gw.test"
	h.Challenge(w, r, true)
	if got := w.Header().Get("WWW-Authenticate"); got != `Bearer resource_metadata="http://gw.test/.well-known/oauth-protected-resource/mcp/github", error="invalid_token"` {
		t.Fatalf("challenge %q", got)
	}
}

func jsonString(v any) string { b, _ := json.Marshal(v); return string(b) }

func register(t *testing.T, h *Handler, redirect string) string {
	t.Helper()
	w := serve(h, "POST", RegisterPath, `{"redirect_uris":["`+redirect+`"],"client_name":"Test client","token_endpoint_auth_method":"none"}`)
	m := decodeBody(t, w)
	id, _ := m["client_id"].(string)
	if w.Code != http.StatusCreated || !strings.HasPrefix(id, clientIDPrefix) {
		t.Fatalf("register: %d %v", w.Code, m)
	}
	return id
}

func TestMCPAuthRegister(t *testing.T) {
	h := mcpHandler(t)
	register(t, h, "http://localhost:5555/callback")
	register(t, h, "https://client.example/cb")
	for body, code := range map[string]string{
		`{"redirect_uris":["http://evil.example/cb"]}`: "invalid_redirect_uri",
		`{"redirect_uris":["javascript:alert(1)"]}`:    "invalid_redirect_uri",
		`{"redirect_uris":["https://a.example/cb#x"]}`: "invalid_redirect_uri",
		`{"redirect_uris":[]}`:                         "invalid_redirect_uri",
		`{"redirect_uris":["https://a.example/cb"],"token_endpoint_auth_method":"client_secret_basic"}`: "invalid_client_metadata",
		`{"redirect_uris":["https://a.example/cb"],"grant_types":["client_credentials"]}`:               "invalid_client_metadata",
		`[1]`: "invalid_client_metadata",
	} {
		w := serve(h, "POST", RegisterPath, body)
		if m := decodeBody(t, w); w.Code != http.StatusBadRequest || m["error"] != code {
			t.Errorf("%s: %d %v, want 400 %s", body, w.Code, m, code)
		}
	}
}

func TestMCPAuthAuthorizeRefusals(t *testing.T) {
	h := mcpHandler(t)
	id := register(t, h, "http://localhost:5555/callback")
	q := url.Values{"response_type": {"code"}, "client_id": {id}, "redirect_uri": {"http://localhost:5555/callback"}, "state": {"st"},
		"code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())}, "code_challenge_method": {"S256"}}
	with := func(k, v string) string {
		c := url.Values{}
		for kk, vv := range q {
			c[kk] = vv
		}
		c.Set(k, v)
		return AuthorizePath + "?" + c.Encode()
	}
	// Never redirected: an unknown client or redirect URI.
	for _, target := range []string{with("client_id", "mgc_forged"), with("redirect_uri", "http://evil.example/cb")} {
		if w := serve(h, "GET", target, ""); w.Code != http.StatusBadRequest || w.Header().Get("Location") != "" {
			t.Errorf("%s: %d, Location %q; want 400 without a redirect", target, w.Code, w.Header().Get("Location"))
		}
	}
	for target, code := range map[string]string{
		with("code_challenge_method", "plain"):        "invalid_request",
		with("response_type", "token"):                "unsupported_response_type",
		with("resource", "https://other.example/mcp"): "invalid_target",
	} {
		// Answered here, not redirected: registration is open, so a
		// redirect would make the gateway an open redirector (a hostile
		// review registered https://evil.example and was sent there).
		w := serve(h, "GET", target, "")
		if w.Code != http.StatusBadRequest || w.Header().Get("Location") != "" || !strings.Contains(w.Body.String(), code) {
			t.Errorf("%s: %d %q %s, want 400 %s without a redirect", target, w.Code, w.Header().Get("Location"), w.Body, code)
		}
	}
	// A loopback redirect URI may differ in its port (RFC 8252 §7.3).
	if _, ok := (clientRegistration{RedirectURIs: []string{"http://127.0.0.1:5555/callback"}}).redirect("http://127.0.0.1:6000/callback"); !ok {
		t.Error("a loopback redirect on another port was refused")
	}
}

// TestMCPAuthToken: a code is exchanged once, only by its client with its
// PKCE verifier; the refresh token renews the key once.
func TestMCPAuthToken(t *testing.T) {
	h := mcpHandler(t)
	verifier := oauth2.GenerateVerifier()
	now := time.Now()
	g := mcpGrant{ID: "g1", Person: Person{Subject: "s1", Email: "dana@example.com", Groups: []string{}}, ClientID: "mgc_client",
		Redirect: "http://localhost:5555/callback", Challenge: oauth2.S256ChallengeFromVerifier(verifier), Expires: now.Add(time.Minute), SignedIn: now}
	code, err := h.seal.seal(codePurpose, g)
	if err != nil {
		t.Fatal(err)
	}
	form := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v.Encode()
	}
	exchange := func(client, verifier string) *httptest.ResponseRecorder {
		return serve(h, "POST", OAuthTokenPath, form("grant_type", "authorization_code", "code", code, "client_id", client,
			"redirect_uri", g.Redirect, "code_verifier", verifier))
	}
	for name, w := range map[string]*httptest.ResponseRecorder{
		"wrong verifier": exchange("mgc_client", oauth2.GenerateVerifier()),
		"another client": exchange("mgc_other", verifier),
	} {
		if m := decodeBody(t, w); w.Code != http.StatusBadRequest || m["error"] != "invalid_grant" {
			t.Errorf("%s: %d %v, want invalid_grant", name, w.Code, m)
		}
	}
	w := exchange("mgc_client", verifier)
	tok := decodeBody(t, w)
	key, _ := tok["access_token"].(string)
	refresh, _ := tok["refresh_token"].(string)
	if w.Code != http.StatusOK || !strings.HasPrefix(key, policy.KeyPrefix) || tok["token_type"] != "Bearer" || tok["expires_in"] != float64(3600) || refresh == "" {
		t.Fatalf("exchange: %d %v", w.Code, tok)
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Error("the token answer may be cached")
	}
	if w := exchange("mgc_client", verifier); decodeBody(t, w)["error"] != "invalid_grant" {
		t.Errorf("a code used twice: %d %s", w.Code, w.Body)
	}
	renew := func() *httptest.ResponseRecorder {
		return serve(h, "POST", OAuthTokenPath, form("grant_type", "refresh_token", "refresh_token", refresh, "client_id", "mgc_client"))
	}
	w = renew()
	if m := decodeBody(t, w); w.Code != http.StatusOK || m["access_token"] == key || !strings.HasPrefix(m["access_token"].(string), policy.KeyPrefix) {
		t.Fatalf("refresh: %d %v", w.Code, m)
	}
	if w := renew(); decodeBody(t, w)["error"] != "invalid_grant" {
		t.Errorf("a refresh token used twice: %d %s", w.Code, w.Body)
	}
	for _, body := range []string{form("grant_type", "password", "client_id", "c"), form("grant_type", "refresh_token", "refresh_token", "x"),
		form("grant_type", "authorization_code", "code", "x", "client_id", "c", "code_verifier", "short")} {
		if w := serve(h, "POST", OAuthTokenPath, body); w.Code < 400 || decodeBody(t, w)["error"] == nil {
			t.Errorf("%s: %d %s", body, w.Code, w.Body)
		}
	}
	if strings.Contains(w.Body.String(), key) {
		t.Error("an error answer shows a key")
	}
}

func TestMCPAuthConsentDeny(t *testing.T) {
	h := mcpHandler(t)
	g := mcpGrant{ID: "g2", Person: Person{Subject: "s"}, ClientID: "mgc_c", Redirect: "http://localhost:5555/callback", State: "st", Expires: time.Now().Add(time.Minute)}
	sealed, _ := h.seal.seal(consentPurpose, g)
	w := serve(h, "POST", ConsentPath, url.Values{"grant": {sealed}, "decision": {"deny"}}.Encode())
	loc, _ := url.Parse(w.Header().Get("Location"))
	if w.Code != http.StatusSeeOther || loc.Query().Get("error") != "access_denied" || loc.Query().Get("code") != "" || loc.Query().Get("state") != "st" {
		t.Fatalf("deny: %d %q", w.Code, w.Header().Get("Location"))
	}
	// A code sealed for consent is not a code.
	w = serve(h, "POST", OAuthTokenPath, url.Values{"grant_type": {"authorization_code"}, "code": {sealed}, "client_id": {"mgc_c"},
		"code_verifier": {oauth2.GenerateVerifier()}}.Encode())
	if decodeBody(t, w)["error"] != "invalid_grant" {
		t.Fatalf("the consent field redeemed as a code: %d %s", w.Code, w.Body)
	}
}

// The consent page's CSP names only a scheme and host (or an app's
// scheme) of the redirect URI, never registered text beyond it.
func TestConsentTargetKeepsTheCSPToASource(t *testing.T) {
	for uri, want := range map[string]string{
		"http://localhost:5555/callback?x=1": "http://localhost:5555",
		"myapp:x;script-src *":               "myapp:",
		"com.example.app:/oauth":             "com.example.app:",
	} {
		if _, source := consentTarget(uri); source != want {
			t.Errorf("%q: CSP source %q, want %q", uri, source, want)
		}
	}
}
