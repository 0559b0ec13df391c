package admin

import (
	"net/http"
	"path"
	"strings"

	"github.com/modelgate/modelgate/providers"
)

// family is the error format of every API answer: this is Anthropic's
// Admin API, whichever provider the gateway serves.
const family = providers.FormatAnthropic

func writeError(w http.ResponseWriter, e *providers.APIError) { e.Write(w, family) }

func fail(w http.ResponseWriter, status int, msg string) {
	writeError(w, &providers.APIError{Status: status, Message: msg})
}

// routes is the API's route table. Each resource also has method-less
// patterns, behind the same checks as its routes, so that a path or
// method no route takes is answered in the API's own error family (a
// ServeMux would answer in plain text): under the keys and workspaces a
// 405 for a known path and a 404 for a deeper one; a report or the
// sessions list a 405; any other path a 404.
func (a *Handler) routes() *http.ServeMux {
	const ws = workspacesPath
	m := http.NewServeMux()
	handle := func(pattern string, h http.HandlerFunc) { m.HandleFunc(pattern, h) }

	// Keys and workspaces. A trailing slash names the same object, as it
	// always has.
	for _, p := range []string{"", "/{$}"} {
		handle("GET "+keysPath+p, a.controls(a.listKeys))
		handle("POST "+keysPath+p, a.controls(a.createKey))
		handle("GET "+keysPath+"/{id}"+p, a.controls(a.getKey))
		handle("POST "+keysPath+"/{id}"+p, a.controls(a.updateKey))
		handle("GET "+ws+p, a.controls(a.listWorkspaces))
		handle("POST "+ws+p, a.controls(a.createWorkspace))
		handle("GET "+ws+"/{id}"+p, a.controls(a.getWorkspace))
		handle("POST "+ws+"/{id}"+p, a.controls(a.updateWorkspace))
	}
	handle("POST "+ws+"/{id}/archive", a.controls(a.archiveWorkspace))
	for _, base := range []string{keysPath, ws} {
		for _, p := range []string{base, base + "/{$}", base + "/{id}", base + "/{id}/{$}"} {
			// (A GET pattern takes HEAD too; these objects never did.)
			handle("HEAD "+p, a.controls(notAllowed("GET, POST", "GET or POST", true)))
			handle(p, a.controls(notAllowed("GET, POST", "GET or POST", true)))
		}
		handle(base+"/", a.controls(noControlsEndpoint))
	}
	handle(ws+"/{id}/archive", a.controls(notAllowed("GET, POST", "GET or POST", true)))

	// Sessions: GET only (HEAD too is refused, as it always was).
	handle("GET "+SessionsPath, requireCaller(a.serveSessions))
	handle("HEAD "+SessionsPath, requireCaller(notAllowed("GET", "GET", false)))
	handle(SessionsPath, requireCaller(notAllowed("GET", "GET", false)))

	// Reports (GET patterns take HEAD too).
	handle("GET "+UsageReportPath, a.reportCaller(a.report))
	handle("GET "+CostReportPath, a.reportCaller(a.report))
	handle("GET "+ClaudeCodeReportPath, a.reportCaller(a.claudeCode))
	for _, p := range []string{UsageReportPath, CostReportPath, ClaudeCodeReportPath} {
		handle(p, a.reportCaller(notAllowed("GET, HEAD", "GET", false)))
	}

	handle("/", noEndpoint)
	return m
}

// notAllowed answers a method a resource does not take; onPath names the
// path in the message.
func notAllowed(allow, use string, onPath bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		on := ""
		if onPath {
			on = " on " + r.URL.Path
		}
		fail(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed"+on+"; use "+use)
	}
}

// noEndpoint answers a path the API does not have, quoting at most 200
// bytes of it.
func noEndpoint(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if len(p) > 200 {
		p = p[:200] + "…"
	}
	fail(w, http.StatusNotFound, "no endpoint for "+r.Method+" "+p+" on this gateway")
}

// noControlsEndpoint is noEndpoint under the keys and workspaces, which
// quote the path whole.
func noControlsEndpoint(w http.ResponseWriter, r *http.Request) {
	fail(w, http.StatusNotFound, "no endpoint for "+r.Method+" "+r.URL.Path+" on this gateway")
}

// canonical reports whether p (escaped) is what ServeMux would route as
// it is: no dot segments, no doubled slashes.
func canonical(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}
