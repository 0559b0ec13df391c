package admin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// TestRoutesAnswerUnroutedInTheAPIFamily: what no route takes is answered
// as the hand router answered it, in Anthropic's error shape: under the
// keys and workspaces the caller is checked first, then a known path with
// another method is a 405 allowing GET and POST (HEAD included, which a
// GET pattern would otherwise take), and a deeper path a 404; a trailing
// slash names the same object; a report allows GET and HEAD, the sessions
// list GET only; a path with dot segments is a 404, never ServeMux's
// redirect; and nothing is answered in plain text.
func TestRoutesAnswerUnroutedInTheAPIFamily(t *testing.T) {
	a, _ := controlsAdmin(t)
	user := &policy.Identity{KeyID: "u", Role: policy.RoleUser}
	for _, c := range []struct {
		id           *policy.Identity
		method, path string
		status       int
		allow, msg   string
	}{
		{adminID, "GET", keysPath + "/", 200, "", ""},
		{adminID, "GET", workspacesPath + "/", 200, "", ""},
		{adminID, "GET", keysPath + "/nosuch/", 404, "", `no API key "nosuch"`},
		{adminID, "HEAD", keysPath, 405, "GET, POST", "method HEAD not allowed on " + keysPath + "; use GET or POST"},
		{adminID, "DELETE", keysPath + "/k1", 405, "GET, POST", "method DELETE not allowed on " + keysPath + "/k1; use GET or POST"},
		{adminID, "GET", workspacesPath + "/w1/archive", 405, "GET, POST", "use GET or POST"},
		{adminID, "POST", keysPath + "/k1/archive", 404, "", "no endpoint for POST " + keysPath + "/k1/archive on this gateway"},
		{adminID, "GET", workspacesPath + "/w1/archive/x", 404, "", "no endpoint for GET"},
		{user, "DELETE", keysPath, 403, "", "needs the gateway's admin key"},
		{nil, "PUT", workspacesPath + "/w1/y", 401, "", "missing or unknown API key"},
		{user, "GET", keysPath + "/./k1", 403, "", "needs the gateway's admin key"},
		{adminID, "GET", keysPath + "/x/..", 404, "", "no endpoint for GET " + keysPath + "/x/.. on this gateway"},
		{adminID, "GET", "/v1/organizations//api_keys", 404, "", "no endpoint for GET /v1/organizations//api_keys on this gateway"},
		{adminID, "POST", CostReportPath, 405, "GET, HEAD", "method POST not allowed; use GET"},
		{nil, "POST", UsageReportPath, 401, "", "missing or unknown API key"},
		{adminID, "HEAD", SessionsPath, 405, "GET", "method HEAD not allowed; use GET"},
		{adminID, "GET", SessionsPath + "/", 404, "", "no endpoint for GET " + SessionsPath + "/ on this gateway"},
		{adminID, "GET", "/v1/organizations", 404, "", "no endpoint for GET /v1/organizations on this gateway"},
		{adminID, "GET", "/v1/organizations/usage_report", 404, "", "no endpoint"},
		{adminID, "GET", "/", 404, "", "no endpoint for GET / on this gateway"},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader("{}"))
		if c.id != nil {
			req = req.WithContext(policy.WithIdentity(req.Context(), c.id))
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, req)
		name := c.method + " " + c.path
		if rec.Code != c.status || rec.Header().Get("Allow") != c.allow || rec.Header().Get("Location") != "" {
			t.Errorf("%s: %d allow %q location %q, want %d allow %q", name, rec.Code, rec.Header().Get("Allow"), rec.Header().Get("Location"), c.status, c.allow)
		}
		if rec.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: Content-Type %q", name, rec.Header().Get("Content-Type"))
		}
		if c.status == http.StatusOK || c.method == http.MethodHead {
			continue
		}
		if e := decodeErr(t, rec); e.Type != "error" || !strings.Contains(e.Error.Message, c.msg) {
			t.Errorf("%s: %+v, want an error saying %q", name, e, c.msg)
		}
	}
}
