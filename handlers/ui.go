package handlers

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// The dashboard: static files embedded in the binary, served by llm_admin
// at /ui/ without a key (the page signs in itself and sends the key with
// every API call it makes), under a Content-Security-Policy that allows
// nothing but the page's own origin: no CDN, no inline script, no frames.

//go:embed ui
var uiFiles embed.FS

// UIPath is where the dashboard lives.
const UIPath = "/ui/"

const uiCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// isUIPath reports the dashboard's paths.
func isUIPath(p string) bool { return p == "/ui" || strings.HasPrefix(p, UIPath) }

// IsBrowserRoot reports a browser opening the site's root (it asks for
// HTML), which is sent to the dashboard instead of an API client's 401.
// The redirect is answered by whoever sees it first (llm_auth for a
// request without a key, else llm_admin): the request is never passed on
// unauthenticated to what follows on the site.
func IsBrowserRoot(r *http.Request) bool {
	return r.URL.Path == "/" && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// serveUI answers the dashboard's files.
func serveUI(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/ui" {
		http.Redirect(w, r, UIPath, http.StatusMovedPermanently)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	name := strings.TrimPrefix(path.Clean(r.URL.Path), "/")
	if name == "ui" {
		name = "ui/index.html"
	}
	b, err := fs.ReadFile(uiFiles, name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	h.Set("Content-Security-Policy", uiCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
	switch path.Ext(name) {
	case ".html":
		h.Set("Content-Type", "text/html; charset=utf-8")
	case ".js":
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		h.Set("Content-Type", "text/css; charset=utf-8")
	case ".svg":
		h.Set("Content-Type", "image/svg+xml")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(b)
	}
}
