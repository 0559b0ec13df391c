package handlers

import (
	"net/http/httptest"
	"testing"
)

// TestOnPaths: an admin-only path is matched however a client spells it
// for Caddy's path matcher (case, repeated slashes, dot segments, a
// trailing slash), and nothing else is.
func TestOnPaths(t *testing.T) {
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
	} {
		r := httptest.NewRequest("GET", "http://gw"+target, nil)
		if got := OnPaths(r, paths); got != want {
			t.Errorf("%s: OnPaths = %v, want %v", target, got, want)
		}
	}
	if OnPaths(httptest.NewRequest("GET", "/metrics", nil), nil) {
		t.Error("no paths matched /metrics")
	}
}
