package integration

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestMetricsNeedAdminKey: a `metrics /metrics` handler on a site guarded
// by llm_auth answers admin keys only; every other key gets a 403 in its
// client's family, however it spells the path, and reads no counter.
func TestMetricsNeedAdminKey(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML(), siteExtra: "handle /metrics {\n\t\tmetrics\n\t}"})
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); st != 200 {
		t.Fatalf("chat: %d %s", st, body)
	}
	st, _, body := g.do(t, "GET", "/metrics", adminKey, "")
	if st != 200 || !strings.Contains(string(body), "modelgate_requests_total") {
		t.Fatalf("admin key: %d %.300s", st, body)
	}
	for _, p := range []string{"/metrics", "/METRICS", "//metrics"} {
		st, _, body := g.do(t, "GET", p, aliceKey, "")
		if st != 403 || strings.Contains(string(body), "modelgate_") || !strings.Contains(string(body), "admin key") {
			t.Fatalf("alice on %s: %d %.300s", p, st, body)
		}
	}
	if st, _, body := g.do(t, "GET", "/metrics", "", ""); st != 401 {
		t.Fatalf("no key: %d %.300s", st, body)
	}
}
