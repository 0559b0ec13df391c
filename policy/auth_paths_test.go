package policy

import (
	"net/http/httptest"
	"testing"
)

// TestPathSet: an admin-only path is matched however a client spells it
// for Caddy's path matcher (case, repeated slashes, dot segments, a
// trailing slash), and nothing else is.
func TestPathSet(t *testing.T) {
	paths := []string{"/metrics", "/debug/*"}
	for target, want := range map[string]bool{
		"/metrics":             true,
		"/METRICS":             true,
		"//metrics":            true,
		"/./metrics":           true,
		"/v1/../metrics":       true,
		"/metrics/":            true,
		"/metrics?x=1":         true,
		"/%6detrics":           true,
		"/debug/pprof":         true,
		"/debug":               true,
		"/metricsx":            false,
		"/v1/metrics":          false,
		"/v1/chat/completions": false,
		"/":                    false,
		"/Debug/x":             true,
		"/metrics/..":          false,
	} {
		r := httptest.NewRequest("GET", "http://gw"+target, nil)
		if got := NewPathSet(paths).Match(r); got != want {
			t.Errorf("%s: Match = %v, want %v", target, got, want)
		}
	}
	if NewPathSet(nil).Match(httptest.NewRequest("GET", "/metrics", nil)) {
		t.Error("no paths matched /metrics")
	}
}
