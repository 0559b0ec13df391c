package integration

import (
	"net/http"
	"testing"

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
