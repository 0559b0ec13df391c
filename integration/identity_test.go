package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/modelgate/modelgate/internal/testlane"
)

// The client the test IdP (integration/testdata/oidc/idp.mjs) registers.
const (
	idpClientID     = "modelgate"
	idpClientSecret = "modelgate-test-secret"
)

// oidcProviderDir is the npm oidc-provider install: the
// $MODELGATE_TEST_OIDC_PROVIDER that scripts/test.sh exports, else what
// scripts/oidc-provider.sh installs when npm is there.
func oidcProviderDir(t *testing.T) string {
	t.Helper()
	testlane.FullOnly(t, "the oidc-provider OpenID provider (npm)")
	if d := os.Getenv("MODELGATE_TEST_OIDC_PROVIDER"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	if _, err := os.Stat(filepath.Join(root, ".cache", "oidc-provider", "node_modules", "oidc-provider")); err == nil {
		return filepath.Join(root, ".cache", "oidc-provider")
	}
	if _, err := exec.LookPath("npm"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI: npm is missing, so the test OpenID provider cannot be installed (scripts/oidc-provider.sh)")
		}
		t.Skip("identity tests skipped: $MODELGATE_TEST_OIDC_PROVIDER is unset and npm is not installed to fetch oidc-provider")
	}
	out, err := exec.Command("sh", filepath.Join(root, "scripts", "oidc-provider.sh")).Output()
	if err != nil {
		t.Fatalf("scripts/oidc-provider.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// startIdP runs the real OpenID provider on a free loopback port, with
// redirect as its client's one redirect URI.
func startIdP(t *testing.T, port int, redirect string, env ...string) string {
	t.Helper()
	dir := oidcProviderDir(t)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("identity tests skipped: node is not installed")
	}
	cmd := exec.Command(node, filepath.Join("testdata", "oidc", "idp.mjs"))
	cmd.Env = append(os.Environ(), "OIDC_PROVIDER_DIR="+dir, fmt.Sprintf("PORT=%d", port), "REDIRECT_URIS="+redirect)
	cmd.Env = append(cmd.Env, env...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	cmd.Stderr = logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if issuer, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				ready <- issuer
			}
		}
	}()
	select {
	case issuer := <-ready:
		return issuer
	case <-time.After(20 * time.Second):
		t.Fatalf("the OpenID provider did not start; its log:\n%s", logs.String())
	}
	return ""
}

// identitySetup is a gateway signing people in with the test IdP.
type identitySetup struct {
	g      *gateway
	issuer string
	// more are the other instances (identityOptions.more), on the same
	// ledger and IdP.
	more []*gateway
}

// startIdentity starts a gateway whose llm_auth has an oidc block and
// group rules for the IdP's two groups (and an auditors group), then the
// IdP. The gateway starts first: it must not need the IdP to start.
func startIdentity(t *testing.T, oidcExtra string, idpEnv ...string) identitySetup {
	t.Helper()
	return startIdentityWith(t, identityOptions{oidcExtra: oidcExtra, idpEnv: idpEnv})
}

// identityOptions add to startIdentity's gateway and IdP: lines inside
// the oidc block, lines beside it in llm_auth (e.g. scim_token), the
// gateway's environment and the IdP's.
type identityOptions struct {
	oidcExtra, authExtra string
	env, idpEnv          []string
	// models and ledgerLine replace the echo-only models file and the
	// ledger line (gatewayConfig's) when set.
	models, ledgerLine string
	// more starts that many more instances of the gateway, each with
	// its own callback among the IdP's redirect URIs.
	more int
}

func startIdentityWith(t *testing.T, o identityOptions) identitySetup {
	t.Helper()
	idpPort := freePort(t)
	issuer := fmt.Sprintf("http://127.0.0.1:%d", idpPort)
	auth := fmt.Sprintf(`oidc {
			issuer %s
			client_id %s
			client_secret {env.OIDC_SECRET}
			groups_claim groups
			scopes openid email profile groups offline_access
			name TestIdP
			%s
		}
		group gateway-admins {
			role admin
		}
		group engineering {
			workspace eng
			models echo
			budget 20 monthly
		}
		group auditors {
			role auditor
		}
		%s`, issuer, idpClientID, o.oidcExtra, o.authExtra)
	models := o.models
	if models == "" {
		models = "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"
	}
	cfg := gatewayConfig{models: models, ledgerLine: o.ledgerLine,
		authExtra: auth, env: append([]string{"OIDC_SECRET=" + idpClientSecret}, o.env...)}
	s := identitySetup{g: startGateway(t, cfg), issuer: issuer}
	redirects := []string{s.g.base + "/auth/oidc/callback"}
	for range o.more {
		s.more = append(s.more, startGateway(t, cfg))
		redirects = append(redirects, s.more[len(s.more)-1].base+"/auth/oidc/callback")
	}
	startIdP(t, idpPort, strings.Join(redirects, ","), o.idpEnv...)
	return s
}

// browserless is an HTTP client with a cookie jar that follows
// redirects one at a time, so each answer can be read.
type browserless struct {
	t   *testing.T
	c   *http.Client
	jar *cookiejar.Jar
	// last is the final URL reached and its answer.
	last     *url.URL
	status   int
	body     string
	setCooks map[string]*http.Cookie // every Set-Cookie seen, by name
}

func newBrowserless(t *testing.T) *browserless {
	jar, _ := cookiejar.New(nil)
	b := &browserless{t: t, jar: jar, setCooks: map[string]*http.Cookie{}}
	b.c = &http.Client{Jar: jar, Timeout: 20 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return b
}

// visit sends one request and follows redirects (at most 20) to the end.
func (b *browserless) visit(method, u string, form url.Values) {
	b.t.Helper()
	for range 20 {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequest(method, u, body)
		if err != nil {
			b.t.Fatal(err)
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		req.Header.Set("Accept", "text/html")
		resp, err := b.c.Do(req)
		if err != nil {
			b.t.Fatalf("%s %s: %v", method, u, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, c := range resp.Cookies() {
			b.setCooks[c.Name] = c
		}
		b.last, b.status, b.body = req.URL, resp.StatusCode, string(raw)
		loc := resp.Header.Get("Location")
		if resp.StatusCode < 300 || resp.StatusCode > 399 || loc == "" {
			return
		}
		next, err := req.URL.Parse(loc)
		if err != nil {
			b.t.Fatal(err)
		}
		u, method, form = next.String(), http.MethodGet, nil
	}
	b.t.Fatalf("more than 20 redirects from %s", u)
}

// submit fills the page's first form with values (plus its hidden inputs
// and first named submit button) and posts it.
func (b *browserless) submit(values map[string]string) {
	b.t.Helper()
	doc, err := html.Parse(strings.NewReader(b.body))
	if err != nil {
		b.t.Fatal(err)
	}
	var form *html.Node
	var find func(*html.Node)
	find = func(n *html.Node) {
		if form != nil {
			return
		}
		if n.Type == html.ElementNode && n.Data == "form" {
			form = n
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			find(c)
		}
	}
	find(doc)
	if form == nil {
		b.t.Fatalf("no form on %s (%d):\n%s", b.last, b.status, b.body)
	}
	attr := func(n *html.Node, k string) string {
		for _, a := range n.Attr {
			if a.Key == k {
				return a.Val
			}
		}
		return ""
	}
	vals := url.Values{}
	button := false
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			name := attr(n, "name")
			switch {
			case n.Data == "input" && name != "":
				if v, ok := values[name]; ok {
					vals.Set(name, v)
				} else {
					vals.Set(name, attr(n, "value"))
				}
			case n.Data == "button" && name != "" && !button:
				vals.Set(name, attr(n, "value"))
				button = true
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(form)
	action, err := b.last.Parse(attr(form, "action"))
	if err != nil {
		b.t.Fatal(err)
	}
	b.visit(http.MethodPost, action.String(), vals)
}

// signIn walks the provider's own login and consent pages as user, from
// whatever page the flow is on, until it leaves the provider.
func (b *browserless) signIn(issuer, user string) {
	b.t.Helper()
	for range 4 {
		if !strings.HasPrefix(b.last.String(), issuer) || b.status != http.StatusOK || !strings.Contains(b.body, "<form") {
			return
		}
		b.submit(map[string]string{"login": user, "password": "any"})
	}
}

// get is a JSON call with the jar's cookies and optional headers.
func (b *browserless) call(method, u string, body string, headers ...string) (int, map[string]any) {
	b.t.Helper()
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		b.t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

func errMessage(m map[string]any) string {
	if e, ok := m["error"].(map[string]any); ok {
		s, _ := e["message"].(string)
		return s
	}
	return fmt.Sprint(m)
}

// dashboardSignIn signs user in as the dashboard's button does.
func dashboardSignIn(t *testing.T, s identitySetup, user string) *browserless {
	t.Helper()
	b := newBrowserless(t)
	b.visit(http.MethodGet, s.g.base+"/auth/oidc/login?return=/ui/%23keys", nil)
	b.signIn(s.issuer, user)
	if b.last.String() != s.g.base+"/ui/#keys" && b.last.Path != "/ui/" || b.status != http.StatusOK {
		t.Fatalf("sign-in as %s ended at %s (%d):\n%.2000s", user, b.last, b.status, b.body)
	}
	return b
}

// TestOIDCDashboardSession signs three people in with a real OpenID
// provider (code flow with PKCE, its own login and consent pages): the
// session cookie's attributes, /v1/me, each role's rights on the admin
// API, CSRF, and sign-out.
func TestOIDCDashboardSession(t *testing.T) {
	s := startIdentity(t, "")
	g := s.g

	alice := dashboardSignIn(t, s, "alice")
	c := alice.setCooks["mg_session"]
	if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/" || c.Value == "" {
		t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Lax, Path=/", c)
	}
	if c.Secure {
		t.Errorf("session cookie is Secure on a plain-http site; the browser would never send it back")
	}
	if strings.Contains(c.Value, "alice") {
		t.Errorf("the session cookie shows who signed in in clear: %q", c.Value)
	}
	if until := time.Until(c.Expires); until <= 0 || until > time.Hour+time.Minute {
		t.Errorf("session cookie expires in %v; want within the ID token's hour", until)
	}

	status, me := alice.call(http.MethodGet, g.base+"/v1/me", "")
	if status != http.StatusOK || me["id"] != "alice@example.com" || me["email"] != "alice@example.com" || me["subject"] != "alice" || me["role"] != "admin" {
		t.Fatalf("GET /v1/me as alice: %d %v", status, me)
	}
	csrf, _ := me["csrf_token"].(string)
	if csrf == "" || fmt.Sprint(me["groups"]) != "[gateway-admins engineering]" {
		t.Fatalf("GET /v1/me as alice: csrf_token %q, groups %v", csrf, me["groups"])
	}

	// An admin creates a key with the cookie, and only with the token.
	const create = `{"name":"made-by-alice"}`
	if st, out := alice.call(http.MethodPost, g.base+"/v1/organizations/api_keys", create); st != http.StatusForbidden || !strings.Contains(errMessage(out), "X-CSRF-Token") {
		t.Errorf("POST api_keys with the cookie and no X-CSRF-Token: %d %v, want 403 naming X-CSRF-Token", st, out)
	}
	if st, out := alice.call(http.MethodPost, g.base+"/v1/organizations/api_keys", create, "X-CSRF-Token", "forged"); st != http.StatusForbidden {
		t.Errorf("POST api_keys with a wrong X-CSRF-Token: %d %v, want 403", st, out)
	}
	if st, out := alice.call(http.MethodPost, g.base+"/v1/organizations/api_keys", create, "X-CSRF-Token", csrf); st != http.StatusOK || out["value"] == nil {
		t.Errorf("POST api_keys as admin alice with the token: %d %v", st, out)
	}
	if st, out := alice.call(http.MethodGet, g.base+"/v1/organizations/usage_report/messages?starting_at=2026-01-01T00:00:00Z", ""); st != http.StatusOK {
		t.Errorf("usage report as alice: %d %v", st, out)
	}
	// A session is no way to call models.
	if st, out := alice.call(http.MethodPost, g.base+"/v1/chat/completions", `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`, "X-CSRF-Token", csrf); st != http.StatusUnauthorized {
		t.Errorf("chat completion with only the session cookie: %d %v, want 401 (models need a key)", st, out)
	}

	bob := dashboardSignIn(t, s, "bob")
	st, me := bob.call(http.MethodGet, g.base+"/v1/me", "")
	if st != http.StatusOK || me["role"] != "member" || me["workspace_id"] != "eng" || fmt.Sprint(me["models"]) != "[echo]" {
		t.Fatalf("GET /v1/me as bob: %d %v", st, me)
	}
	bobCSRF, _ := me["csrf_token"].(string)
	if bobCSRF == csrf {
		t.Errorf("two sessions share a CSRF token")
	}
	if st, out := bob.call(http.MethodPost, g.base+"/v1/organizations/api_keys", create, "X-CSRF-Token", bobCSRF); st != http.StatusForbidden {
		t.Errorf("POST api_keys as member bob: %d %v, want 403", st, out)
	}
	if st, out := bob.call(http.MethodGet, g.base+"/v1/organizations/api_keys", ""); st != http.StatusOK || len(out["data"].([]any)) != 0 {
		t.Errorf("GET api_keys as member bob (no keys of his own): %d %v, want an empty list", st, out)
	}

	carol := dashboardSignIn(t, s, "carol")
	st, me = carol.call(http.MethodGet, g.base+"/v1/me", "")
	carolCSRF, _ := me["csrf_token"].(string)
	if st != http.StatusOK || me["role"] != "auditor" {
		t.Fatalf("GET /v1/me as carol: %d %v", st, me)
	}
	if st, out := carol.call(http.MethodGet, g.base+"/v1/organizations/api_keys", ""); st != http.StatusOK || len(out["data"].([]any)) < 4 {
		t.Errorf("GET api_keys as auditor carol: %d %v, want every key", st, out)
	} else if strings.Contains(fmt.Sprint(out), "sk-mg-") && !strings.Contains(fmt.Sprint(out), "...") {
		t.Errorf("an auditor sees a key's secret: %v", out)
	}
	if st, out := carol.call(http.MethodPost, g.base+"/v1/organizations/api_keys", create, "X-CSRF-Token", carolCSRF); st != http.StatusForbidden {
		t.Errorf("POST api_keys as auditor carol: %d %v, want 403", st, out)
	}
	if st, out := carol.call(http.MethodGet, g.base+"/v1/organizations/sessions", ""); st != http.StatusOK {
		t.Errorf("sessions as auditor carol: %d %v", st, out)
	}

	// A key always decides over a cookie, even a broken one: nothing here
	// locks an admin key out.
	if st, _, body := g.do(t, http.MethodGet, "/v1/organizations/api_keys", adminKey, "", "Cookie", "mg_session=garbage"); st != http.StatusOK {
		t.Errorf("admin key with a garbage session cookie: %d %s", st, body)
	}

	// Sign-out needs the token, then ends the session.
	if st, out := alice.call(http.MethodPost, g.base+"/auth/oidc/logout", ""); st != http.StatusForbidden {
		t.Errorf("logout without X-CSRF-Token: %d %v, want 403", st, out)
	}
	oldCookie := alice.setCooks["mg_session"].Value
	if st, out := alice.call(http.MethodPost, g.base+"/auth/oidc/logout", "", "X-CSRF-Token", csrf); st != http.StatusOK || out["signed_out"] != true {
		t.Errorf("logout: %d %v", st, out)
	}
	if st, out := alice.call(http.MethodGet, g.base+"/v1/me", ""); st != http.StatusUnauthorized {
		t.Errorf("GET /v1/me after logout: %d %v, want 401", st, out)
	}
	// The old cookie, replayed after sign-out, is refused too.
	if st, _, body := g.do(t, http.MethodGet, "/v1/me", "", "", "Cookie", "mg_session="+oldCookie); st != http.StatusUnauthorized {
		t.Errorf("replayed cookie after logout: %d %s, want 401", st, body)
	}
	if !strings.Contains(g.stderr.String(), `"action": "oidc.signin"`) && !strings.Contains(g.stderr.String(), `"action":"oidc.signin"`) {
		t.Errorf("no oidc.signin audit event in the gateway's log")
	}
}

// TestOIDCForgedSignIn: a forged state, a missing sign-in cookie, a nonce
// swapped on the way to the provider and an open redirect each get a 401
// (or the site's own page) naming what failed.
func TestOIDCForgedSignIn(t *testing.T) {
	s := startIdentity(t, "")
	g := s.g

	// State: a callback whose state is not the one this browser started.
	b := newBrowserless(t)
	resp, err := b.c.Get(g.base + "/auth/oidc/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound || !strings.HasPrefix(resp.Header.Get("Location"), s.issuer+"/auth?") {
		t.Fatalf("login: %d to %q, want 302 to the provider", resp.StatusCode, resp.Header.Get("Location"))
	}
	idpURL, _ := url.Parse(resp.Header.Get("Location"))
	q := idpURL.Query()
	if q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		t.Fatalf("authorization request lacks PKCE, nonce or state: %v", q)
	}
	for _, tc := range []struct{ name, query, want string }{
		{"forged state", "state=forged&code=x", "state: does not match"},
		{"no state", "code=x", "state: does not match"},
		{"provider error", "error=access_denied&error_description=nope", "refused the sign-in"},
	} {
		// A refused callback ends the sign-in: each case starts its own.
		b := newBrowserless(t)
		if resp, err := b.c.Get(g.base + "/auth/oidc/login"); err != nil {
			t.Fatal(err)
		} else {
			resp.Body.Close()
		}
		st, out := b.call(http.MethodGet, g.base+"/auth/oidc/callback?"+tc.query, "")
		if st != http.StatusUnauthorized || !strings.Contains(errMessage(out), tc.want) {
			t.Errorf("%s: %d %v, want 401 naming %q", tc.name, st, out, tc.want)
		}
	}
	fresh := newBrowserless(t)
	if st, out := fresh.call(http.MethodGet, g.base+"/auth/oidc/callback?state="+q.Get("state")+"&code=x", ""); st != http.StatusUnauthorized ||
		!strings.Contains(errMessage(out), "state: this browser has no sign-in in progress") {
		t.Errorf("callback in a browser that started no sign-in: %d %v", st, out)
	}
	if st, out := fresh.call(http.MethodGet, g.base+"/auth/oidc/callback?state=x&code=x", "", "Cookie", "mg_oidc_flow=AAAAforgedAAAA"); st != http.StatusUnauthorized ||
		!strings.Contains(errMessage(out), "state: the sign-in cookie was not issued by this gateway") {
		t.Errorf("callback with a forged sign-in cookie: %d %v", st, out)
	}

	// Nonce: an attacker swaps the nonce in the authorization request; the
	// provider signs it into the ID token, and the gateway refuses it.
	n := newBrowserless(t)
	resp, err = n.c.Get(g.base + "/auth/oidc/login")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		n.setCooks[c.Name] = c
	}
	swapped, _ := url.Parse(resp.Header.Get("Location"))
	sq := swapped.Query()
	sq.Set("nonce", "attacker-nonce")
	swapped.RawQuery = sq.Encode()
	n.visit(http.MethodGet, swapped.String(), nil)
	n.signIn(s.issuer, "alice")
	if n.status != http.StatusUnauthorized || !strings.Contains(n.body, "nonce") {
		t.Errorf("sign-in with a swapped nonce: %d %s, want 401 naming the nonce", n.status, n.body)
	}
	if _, ok := n.setCooks["mg_session"]; ok && n.setCooks["mg_session"].Value != "" {
		t.Errorf("a session cookie was set despite the nonce")
	}

	// The return address stays on the site.
	for _, ret := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
		e := newBrowserless(t)
		e.visit(http.MethodGet, g.base+"/auth/oidc/login?return="+url.QueryEscape(ret), nil)
		e.signIn(s.issuer, "bob")
		if e.last.Host != strings.TrimPrefix(g.base, "http://") || e.last.Path != "/ui/" {
			t.Errorf("return=%s ended at %s, want the site's /ui/", ret, e.last)
		}
	}
}

// TestOIDCProviderDown: a gateway whose provider does not answer starts,
// says so on /auth/oidc/status, answers its login with 502 naming the
// provider, and keys keep working.
func TestOIDCProviderDown(t *testing.T) {
	dead := freePort(t)
	auth := fmt.Sprintf("oidc {\n\t\t\tissuer http://127.0.0.1:%d\n\t\t\tclient_id x\n\t\t\tname Acme\n\t\t}", dead)
	g := startGateway(t, gatewayConfig{models: "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n", authExtra: auth})
	// Without a key: that sign-in is unavailable, not where the provider
	// is nor how dialling it failed; with the admin key: why.
	internal := fmt.Sprintf("127.0.0.1:%d", dead)
	st, _, body := g.do(t, http.MethodGet, "/auth/oidc/status", "", "")
	var out map[string]any
	_ = json.Unmarshal(body, &out)
	if st != http.StatusOK || out["ready"] != false || !strings.Contains(fmt.Sprint(out["error"]), "unavailable") || strings.Contains(string(body), internal) {
		t.Errorf("status with the provider down, without a key: %d %s", st, body)
	}
	st, _, body = g.do(t, http.MethodGet, "/auth/oidc/status", adminKey, "")
	out = nil
	_ = json.Unmarshal(body, &out)
	if st != http.StatusOK || out["ready"] != false || !strings.Contains(fmt.Sprint(out["error"]), "cannot be used") || !strings.Contains(string(body), internal) {
		t.Errorf("status with the provider down, to the admin: %d %s", st, body)
	}
	if st, _, body := g.do(t, http.MethodGet, "/auth/oidc/login", "", ""); st != http.StatusBadGateway || !strings.Contains(string(body), "key sign-in still works") || strings.Contains(string(body), internal) {
		t.Errorf("login with the provider down: %d %s", st, body)
	}
	if st, _, body := g.do(t, http.MethodGet, "/v1/me", adminKey, ""); st != http.StatusOK {
		t.Errorf("admin key with the provider down: %d %s", st, body)
	}
	if st, _, body := g.do(t, http.MethodPost, "/v1/chat/completions", aliceKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); st != http.StatusOK {
		t.Errorf("model call with the provider down: %d %s", st, body)
	}
}
