package policy

import (
	"net/http/httptest"
	"testing"
)

// TestPublicPathsAreDecidedOnTheCleanedPath: a keyless request is let on
// only under a public path's own name. Dot segments and doubled slashes
// (curl --path-as-is, %2e%2e) used to pass the raw prefix test on their
// way to an endpoint that needs a key.
func TestPublicPathsAreDecidedOnTheCleanedPath(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		public       bool
	}{
		{"GET", "/health/liveness", true},
		{"HEAD", "/", true},
		{"GET", "/modelgate/breaker/resume", true},
		{"GET", "/mcp-approvals/tok", true},
		{"POST", "/ui/spend-requests/req_1", true},
		{"GET", "/ui/", true},
		{"GET", "/ui/app.js", true},
		{"POST", "/mcp-approvals/../v1/chat/completions", false},
		{"POST", "/mcp-approvals/%2e%2e/v1/chat/completions", false},
		{"POST", "/mcp-approvals//x", false},
		{"POST", "/ui/spend-requests/../../v1/messages", false},
		{"GET", "/ui/../v1/models", false},
		{"GET", "/ui/./app.js", false},
		{"GET", "//health/liveness", false},
		{"GET", "/health/../v1/models", false},
		{"GET", "/modelgate/breaker/resume/../../../v1/models", false},
	} {
		r := httptest.NewRequest(tc.method, "http://gw.example"+tc.path, nil)
		if got := IsPublicPath(r); got != tc.public {
			t.Errorf("%s %s: public = %v, want %v", tc.method, tc.path, got, tc.public)
		}
	}
}
