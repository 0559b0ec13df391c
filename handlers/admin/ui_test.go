package admin

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/handlers"
	"github.com/modelgate/modelgate/policy"
)

// TestDashboardFiles: the dashboard is served without a key, from the
// binary, under a CSP that allows only its own origin, and references
// nothing outside it.
func TestDashboardFiles(t *testing.T) {
	a := &Handler{}
	for path, ctype := range map[string]string{"/ui/": "text/html", "/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		r := httptest.NewRequest("GET", path, nil)
		if !handlers.NewSite().Public(r) || !a.Match(r) {
			t.Errorf("%s is not public or not the admin handler's", path)
		}
		w := httptest.NewRecorder()
		a.ServeHTTP(w, r)
		csp := w.Header().Get("Content-Security-Policy")
		if w.Code != 200 || !strings.HasPrefix(w.Header().Get("Content-Type"), ctype) || !strings.Contains(csp, "default-src 'none'") ||
			!strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe") {
			t.Errorf("%s: %d %v", path, w.Code, w.Header())
		}
	}
	w := httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest("GET", "/ui", nil))
	if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != "/ui/" {
		t.Errorf("/ui: %d %v", w.Code, w.Header())
	}
	w = httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest("GET", "/ui/../../etc/passwd", nil))
	if w.Code != 404 {
		t.Errorf("path traversal: %d", w.Code)
	}
	if r := httptest.NewRequest("POST", "/ui/", nil); handlers.NewSite().Public(r) {
		t.Error("POST /ui/ is public")
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	inline := regexp.MustCompile(`(?i)<script>|\son[a-z]+=|style="`)
	_ = fs.WalkDir(uiFiles, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(uiFiles, p)
		for _, m := range external.FindAllString(string(b), -1) {
			if !strings.HasSuffix(m, "www.w3.org") { // the SVG namespace name, never fetched
				t.Errorf("%s references %s: the dashboard must work offline", p, m)
			}
		}
		if strings.HasSuffix(p, ".html") && inline.Match(b) {
			t.Errorf("%s has inline script, handlers or styles the CSP refuses", p)
		}
		return nil
	})
}

// TestBrowserAtRootGoesToDashboard: a browser opening the site's root is
// pointed to /ui/ by the admin handler; the root is never public (what
// follows llm_auth on a site without llm_admin must not see it without a
// key: llm_auth answers the redirect itself); an API client (no
// text/html in Accept) still needs a key there, and only GET is
// redirected.
func TestBrowserAtRootGoesToDashboard(t *testing.T) {
	a := &Handler{}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	if handlers.NewSite().Public(r) || !policy.IsBrowserRoot(r) || !a.Match(r) {
		t.Fatal("a browser's GET / is public, or not seen as a browser's, or not the admin handler's")
	}
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	if w.Code != http.StatusFound || w.Header().Get("Location") != policy.UIPath {
		t.Errorf("GET / from a browser: %d %v", w.Code, w.Header())
	}
	for _, c := range []struct{ method, accept string }{{"GET", ""}, {"GET", "*/*"}, {"GET", "application/json"}, {"POST", "text/html"}} {
		r := httptest.NewRequest(c.method, "/", nil)
		r.Header.Set("Accept", c.accept)
		if handlers.NewSite().Public(r) || a.Match(r) {
			t.Errorf("%s / with Accept %q is public or the admin handler's", c.method, c.accept)
		}
	}
}

// TestHiddenWinsOverStyles: the stylesheet cannot show what the page
// hides (it once gave nav display: flex, which showed the menu and "Sign
// out" before sign-in).
func TestHiddenWinsOverStyles(t *testing.T) {
	css, err := fs.ReadFile(uiFiles, "ui/style.css")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\[hidden\]\s*\{\s*display:\s*none\s*!important;?\s*\}`).Match(css) {
		t.Error("style.css lacks [hidden] { display: none !important }")
	}
}
