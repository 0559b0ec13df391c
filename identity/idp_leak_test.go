package identity

import (
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// TestKeylessPathsHideTheProvidersAddress: with the provider unreachable,
// the keyless sign-in paths tell a caller without an admin key only that
// sign-in is unavailable, never the provider's address or the dial or TLS
// error (a hostile review found POST /auth/oidc/device returning both);
// an admin is told why.
func TestKeylessPathsHideTheProvidersAddress(t *testing.T) {
	var told []error
	h, err := New(Config{Issuer: "https://10.9.8.7:1", ClientID: "gw", Name: "Acme SSO"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	h.unavailable = func(err error) { told = append(told, err) }
	for _, p := range []struct{ method, path string }{{"GET", StatusPath}, {"GET", LoginPath}, {"POST", DevicePath}} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(p.method, p.path, nil))
		if body := w.Body.String(); strings.Contains(body, "10.9.8.7") || !strings.Contains(body, "unavailable") {
			t.Errorf("%s %s without a key: %d %s", p.method, p.path, w.Code, body)
		}
	}
	w := httptest.NewRecorder()
	r := httptest.NewRequest("POST", DevicePath, nil)
	h.ServeHTTP(w, r.WithContext(policy.WithIdentity(r.Context(), &policy.Identity{KeyID: "root", Role: policy.RoleAdmin})))
	if !strings.Contains(w.Body.String(), "10.9.8.7") {
		t.Errorf("an admin is not told why: %s", w.Body.String())
	}
	if len(told) == 0 {
		t.Error("the provider's failure was not logged")
	}
}

// TestNoProviderErrorTextToCallers keeps the provider's error text off
// every idp_unavailable answer, those of paths the test above cannot
// reach without a sign-in in progress (the callback, /authorize, the
// token endpoint) included: they go through providerFailed.
func TestNoProviderErrorTextToCallers(t *testing.T) {
	files, _ := filepath.Glob("*.go")
	leak := regexp.MustCompile(`"idp_unavailable", [^)]*err\.Error\(\)|"invalid_grant", err\.Error\(\)`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := leak.Find(src); m != nil {
			t.Errorf("%s: %s sends the provider's error to the caller; use providerFailed", f, m)
		}
	}
}
