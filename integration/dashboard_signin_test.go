package integration

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// TestDashboardBeforeSignIn opens the gateway's root in headless Chromium:
// it lands on /ui/, where only the sign-in form shows (not the menu nor
// "Sign out"); after signing in the menu shows and the form does not. An
// API client at / still gets the 401 that names the key headers.
func TestDashboardBeforeSignIn(t *testing.T) {
	ctx, problems := browser(t)
	g := startGateway(t, gatewayConfig{models: "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"})
	// visible is what the user sees of an element: laid out, not display: none.
	const visible = `(id) => { const e = document.getElementById(id); return !!e && getComputedStyle(e).display !== 'none' && e.getClientRects().length > 0; }`
	var path string
	var nav, signout, form bool
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/"), chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.Evaluate(`location.pathname`, &path),
		chromedp.Evaluate(`(`+visible+`)('nav')`, &nav),
		chromedp.Evaluate(`(`+visible+`)('signout')`, &signout),
		chromedp.Evaluate(`(`+visible+`)('signin')`, &form)); err != nil {
		t.Fatal(err)
	}
	if path != "/ui/" {
		t.Errorf("GET / in a browser ended at %q, want /ui/", path)
	}
	if nav || signout || !form {
		t.Errorf("before sign-in: menu shown %v, Sign out shown %v, sign-in form shown %v; want only the form", nav, signout, form)
	}
	if err := chromedp.Run(ctx, chromedp.SendKeys("#key", adminKey+"\r", chromedp.ByID), chromedp.WaitVisible("#signout", chromedp.ByID),
		chromedp.Evaluate(`(`+visible+`)('nav')`, &nav), chromedp.Evaluate(`(`+visible+`)('signin')`, &form)); err != nil {
		t.Fatal(err)
	}
	if !nav || form {
		t.Errorf("after sign-in: menu shown %v, sign-in form shown %v", nav, form)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("console: %q", p)
	}
	if status, _, body := g.do(t, http.MethodGet, "/", "", ""); status != http.StatusUnauthorized {
		t.Errorf("GET / from an API client: %d %s, want 401", status, body)
	}
}

// TestDashboardOIDCSignIn signs a person in to the dashboard with the real
// OpenID provider in headless Chromium: the "Sign in with TestIdP" button
// beside key sign-in, the provider's own login and consent pages, back to
// the dashboard as that person; a POST without the session's CSRF token
// is refused while the page's own calls (which carry it) work; "Sign out"
// ends the session.
func TestDashboardOIDCSignIn(t *testing.T) {
	ctx, problems := browser(t)
	s := startIdentity(t, "")
	g := s.g
	awaitPromise := func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }
	var label string
	if err := chromedp.Run(ctx, chromedp.Navigate(g.base+"/ui/"), chromedp.WaitVisible("#idp-signin", chromedp.ByID),
		chromedp.WaitVisible("#key", chromedp.ByID), chromedp.Text("#idp-signin", &label, chromedp.ByID),
		chromedp.Click("#idp-signin", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	if label != "Sign in with TestIdP" {
		t.Errorf("the provider's button says %q", label)
	}
	// The provider's login page, then its consent page.
	for i := 0; ; i++ {
		var loc string
		var hasLogin bool
		if err := chromedp.Run(ctx, chromedp.Sleep(200*time.Millisecond), chromedp.Evaluate(`location.href`, &loc),
			chromedp.Evaluate(`!!document.querySelector('input[name="login"]')`, &hasLogin)); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(loc, g.base) {
			break
		}
		if i > 20 {
			t.Fatalf("still on the provider at %s", loc)
		}
		if hasLogin {
			err := chromedp.Run(ctx, chromedp.SendKeys(`input[name="login"]`, "alice", chromedp.ByQuery),
				chromedp.SendKeys(`input[name="password"]`, "any", chromedp.ByQuery), chromedp.Submit(`input[name="login"]`, chromedp.ByQuery))
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		var hasButton bool
		if err := chromedp.Run(ctx, chromedp.Evaluate(`!!document.querySelector('button[type="submit"]')`, &hasButton)); err != nil {
			t.Fatal(err)
		}
		if hasButton {
			if err := chromedp.Run(ctx, chromedp.Click(`button[type="submit"]`, chromedp.ByQuery)); err != nil {
				t.Fatal(err)
			}
		}
	}
	var who string
	var bare, withToken string
	if err := chromedp.Run(ctx, chromedp.WaitVisible("#signout", chromedp.ByID), chromedp.WaitVisible("#nav", chromedp.ByID),
		chromedp.Text("#who", &who, chromedp.ByID),
		// A cross-site form or script would send the cookie but not the token.
		chromedp.Evaluate(`fetch('/v1/organizations/api_keys', {method: 'POST', headers: {'content-type': 'application/json'}, body: '{"name":"csrf"}'}).then((r) => String(r.status))`, &bare, awaitPromise),
		chromedp.Evaluate(`api('/v1/organizations/api_keys', {method: 'POST', body: {name: 'from-dashboard'}}).then((k) => k.created_by.type + ':' + k.name)`, &withToken, awaitPromise)); err != nil {
		t.Fatal(err)
	}
	if who != "alice@example.com (admin)" {
		t.Errorf("the page shows the person as %q", who)
	}
	if bare != "403" {
		t.Errorf("POST with the cookie and no X-CSRF-Token: %s, want 403", bare)
	}
	if withToken != "admin_api:from-dashboard" {
		t.Errorf("the page's own POST: %q", withToken)
	}
	var after string
	if err := chromedp.Run(ctx, chromedp.Click("#signout", chromedp.ByID), chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.WaitVisible("#idp-signin", chromedp.ByID),
		chromedp.Evaluate(`fetch('/v1/me').then((r) => String(r.status))`, &after, awaitPromise)); err != nil {
		t.Fatal(err)
	}
	if after != "401" {
		t.Errorf("GET /v1/me after Sign out: %s, want 401", after)
	}
	if p := problems(); len(p) > 0 {
		t.Logf("console: %q", p)
	}
}
