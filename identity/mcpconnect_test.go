package identity

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// TestConnectPageSignsInFirst: a browser opening an MCP connect link with
// no session (or an ended one) is sent to sign in and back to the link;
// any other request there, and other paths, go on to the key check.
func TestConnectPageSignsInFirst(t *testing.T) {
	h, err := New(Config{Issuer: "https://idp.example.com", ClientID: "gw", ClientSecret: "s"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	link := policy.MCPConnectPath + "link/abc?x=1"
	for _, cookie := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodGet, link, nil)
		if cookie {
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: "forged"})
		}
		w := httptest.NewRecorder()
		id, handled := h.Authenticate(w, r)
		if id != nil || !handled || w.Code != http.StatusFound || w.Header().Get("Location") != prefix+"login?return="+url.QueryEscape(link) {
			t.Fatalf("cookie %t: %v %t %d %q", cookie, id, handled, w.Code, w.Header().Get("Location"))
		}
		if safeReturn(link) != link {
			t.Fatalf("the sign-in would not come back to %q", link)
		}
	}
	for _, r := range []*http.Request{httptest.NewRequest(http.MethodPost, policy.MCPConnectPath+"disconnect/gh", nil), httptest.NewRequest(http.MethodGet, "/v1/organizations/usage", nil)} {
		if id, handled := h.Authenticate(httptest.NewRecorder(), r); id != nil || handled {
			t.Fatalf("%s %s without a cookie: %v %t", r.Method, r.URL, id, handled)
		}
	}
}
