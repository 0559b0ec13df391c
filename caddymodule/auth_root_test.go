package caddymodule

import (
	"net/http"
	"net/http/httptest"
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
