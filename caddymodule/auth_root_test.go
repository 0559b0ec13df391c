package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

type recordingNext struct{ called bool }

func (n *recordingNext) ServeHTTP(w http.ResponseWriter, r *http.Request) error {
	n.called = true
	_, err := w.Write([]byte("the site's own content"))
	return err
}

// TestAuthRootNeedsAKey: on a site where llm_auth guards something other
// than llm_admin (a file server, a proxy), a browser's GET / without a key
// is redirected to the dashboard by llm_auth itself and never reaches
// what follows; an API client gets the 401.
func TestAuthRootNeedsAKey(t *testing.T) {
	auth, err := policy.NewAuth([]policy.Key{{Secret: "sk-test-root-key-1", ID: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Auth{auth: auth, adminPaths: policy.NewPathSet([]string{"/metrics"})}
	for accept, want := range map[string]int{"text/html,*/*;q=0.8": http.StatusFound, "*/*": http.StatusUnauthorized} {
		next := &recordingNext{}
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		w := httptest.NewRecorder()
		if err := a.ServeHTTP(w, r, next); err != nil {
			t.Fatal(err)
		}
		if next.called || w.Code != want {
			t.Errorf("GET / with Accept %q and no key: %d, next handler called %v; want %d and not called", accept, w.Code, next.called, want)
		}
	}
}

// TestAuthSaysNoIdentityProvider: without an oidc block, the dashboard's
// keyless question "is there an identity provider?" gets 200
// {"enabled":false}, not a 401 a browser would log as an error, and
// nothing else under /auth/ opens up.
func TestAuthSaysNoIdentityProvider(t *testing.T) {
	auth, err := policy.NewAuth([]policy.Key{{Secret: "sk-test-root-key-1", ID: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Auth{auth: auth, adminPaths: policy.NewPathSet([]string{"/metrics"})}
	for _, c := range []struct {
		method, path string
		want         int
		body         string
	}{
		{"GET", "/auth/oidc/status", http.StatusOK, `{"enabled":false}`},
		{"POST", "/auth/oidc/status", http.StatusUnauthorized, ""},
		{"GET", "/auth/oidc/login", http.StatusUnauthorized, ""},
	} {
		next := &recordingNext{}
		w := httptest.NewRecorder()
		if err := a.ServeHTTP(w, httptest.NewRequest(c.method, c.path, nil), next); err != nil {
			t.Fatal(err)
		}
		if next.called || w.Code != c.want || (c.body != "" && w.Body.String() != c.body) {
			t.Errorf("%s %s without a key or identity provider: %d %q (next called %v); want %d %s", c.method, c.path, w.Code, w.Body, next.called, c.want, c.body)
		}
	}
}

// TestAuthRefusesBedrockInBedrocksShape: Claude Code's Bedrock mode first
// calls Bedrock's control plane (GET /inference-profiles) through the AWS
// SDK without the gateway key; the 401 it gets, like a keyless call on the
// runtime's /model/… paths, is in Bedrock's error shape ({"message"} and
// x-amzn-ErrorType), as the gateway's other Bedrock answers are, not in
// OpenAI's. Other paths keep their own families.
func TestAuthRefusesBedrockInBedrocksShape(t *testing.T) {
	auth, err := policy.NewAuth([]policy.Key{{Secret: "sk-test-bedrock-key-1", ID: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Auth{auth: auth, adminPaths: policy.NewPathSet([]string{"/metrics"})}
	serve := func(method, path string) *httptest.ResponseRecorder {
		t.Helper()
		next := &recordingNext{}
		w := httptest.NewRecorder()
		if err := a.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader("{}")), next); err != nil {
			t.Fatal(err)
		}
		if next.called {
			t.Fatalf("%s %s without a key reached the next handler", method, path)
		}
		return w
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/inference-profiles?type=SYSTEM_DEFINED&maxResults=1000"},
		{"GET", "/foundation-models"},
		{"POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"},
	} {
		w := serve(c.method, c.path)
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s %s: body %q: %v", c.method, c.path, w.Body, err)
		}
		msg, _ := body["message"].(string)
		if w.Code != http.StatusUnauthorized || w.Header().Get("X-Amzn-Errortype") != "AccessDeniedException" ||
			len(body) != 1 || !strings.Contains(msg, "API key") {
			t.Errorf("%s %s without a key: %d %q x-amzn-ErrorType %q; want 401 {\"message\":…API key…} AccessDeniedException",
				c.method, c.path, w.Code, w.Body, w.Header().Get("X-Amzn-Errortype"))
		}
	}
	// Not Bedrock's: a look-alike path and the OpenAI and Anthropic paths.
	for path, want := range map[string]string{
		"/inference-profilesx": `"error":{"message"`,
		"/v1/chat/completions": `"error":{"message"`,
		"/v1/messages":         `"type":"error"`,
	} {
		w := serve("POST", path)
		if w.Code != http.StatusUnauthorized || w.Header().Get("X-Amzn-Errortype") != "" || !strings.Contains(w.Body.String(), want) {
			t.Errorf("POST %s without a key: %d %q; want 401 with %s", path, w.Code, w.Body, want)
		}
	}
}
