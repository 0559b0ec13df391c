package handlers

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// TestFallbacksRespectAllowLists: a key allowed alias a used to reach
// alias b through `fallbacks: - a: [b]`.
func TestFallbacksRespectAllowLists(t *testing.T) {
	b := newFakeUpstream(t, "b", nil)
	yaml := "model_list:\n" + entry("a", closedPortURL(t)) + entry("b", b.srv.URL) +
		"router_settings:\n  fallbacks:\n    - a: [b]\n"
	g, _ := testGateway(t, yaml, nil)
	onlyA := &policy.Identity{KeyID: "carol", Role: policy.RoleUser, Models: map[string]struct{}{"a": {}}}
	rec := post(g, onlyA, "/v1/chat/completions", chatBody("a", false))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), `model \"a\"`) {
		t.Fatalf("%d %s, want a's own 502", rec.Code, rec.Body.String())
	}
	if n := b.hits.Load(); n != 0 {
		t.Fatalf("fallback b, which the key may not use, got %d requests", n)
	}
	if rec := post(g, alice, "/v1/chat/completions", chatBody("a", false)); rec.Code != http.StatusOK || content(t, rec.Body.Bytes()) != reply("b") {
		t.Fatalf("a key allowed every alias: %d %s, want b's answer", rec.Code, rec.Body.String())
	}
}
