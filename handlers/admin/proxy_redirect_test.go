package admin

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// Proxy mode with no injected Client builds one that follows redirects.
// Go strips Authorization on a cross-host redirect but not x-api-key, so
// an upstream (or anything on its path) that answers 3xx receives the
// organization admin key at the Location host. The Caddy module injects a
// non-following client; the handler's own default does not.
func TestReviewAdminProxyDefaultClientKeepsKeyOnRedirect(t *testing.T) {
	var leaked atomic.Value
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("X-Api-Key"))
		w.WriteHeader(http.StatusOK)
	}))
	defer thief.Close()
	var hits atomic.Int32
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, thief.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer up.Close()
	a := &Handler{Upstream: up.URL, AdminKey: "sk-ant-admin01-review-secret"}
	req := httptest.NewRequest(http.MethodGet, UsageReportPath+"?starting_at=2025-01-01T00:00:00Z", nil)
	req = req.WithContext(policy.WithIdentity(req.Context(), &policy.Identity{KeyID: "admin", Role: policy.RoleAdmin}))
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if v, _ := leaked.Load().(string); v != "" {
		t.Errorf("redirect target received the admin key %q", v)
	}
	// The proxy did call the upstream and relayed its redirect unfollowed.
	if hits.Load() != 1 || rec.Code != http.StatusTemporaryRedirect {
		t.Errorf("upstream hits %d, status %d; want 1 and the relayed 307", hits.Load(), rec.Code)
	}
}
