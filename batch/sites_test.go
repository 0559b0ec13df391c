package batch

import (
	"strings"
	"testing"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// TestSitesKeepTheirBatches: two sites on one ledger, each with its own
// key "alice" (a key id is a label unique only within a site's llm_auth).
// Neither sees, reads or deletes the other's batches and files, and each
// site's worker runs only its own items, as that site's key.
func TestSitesKeepTheirBatches(t *testing.T) {
	st := sqliteStore(t)
	runA, runB := newRunner(), newRunner()
	identify := func(site string) func(string) (*policy.Identity, *apierror.Error) {
		return func(keyID string) (*policy.Identity, *apierror.Error) {
			return &policy.Identity{KeyID: keyID, Owner: site}, nil
		}
	}
	a := instance(t, st, runA, Options{Site: "site-a", Identify: identify("site-a")})
	b := instance(t, st, runB, Options{Site: "site-b", Identify: identify("site-b")})

	status, f := upload(t, a.URL, openAIInput(2), "batch")
	if status != 200 {
		t.Fatalf("upload on site A: %d %s", status, f)
	}
	fileID := field(t, f, "id")
	status, created := call(t, "POST", a.URL+"/v1/messages/batches", "", messageBatch(3), "application/json")
	if status != 200 {
		t.Fatalf("create on site A: %d %s", status, created)
	}
	id := field(t, created, "id")
	waitEnded(t, a.URL+"/v1/messages/batches/"+id, "processing_status", "ended")

	for _, c := range []struct{ method, path string }{
		{"GET", "/v1/messages/batches/" + id},
		{"GET", "/v1/messages/batches/" + id + "/results"},
		{"POST", "/v1/messages/batches/" + id + "/cancel"},
		{"DELETE", "/v1/messages/batches/" + id},
		{"GET", "/v1/files/" + fileID},
		{"GET", "/v1/files/" + fileID + "/content"},
		{"DELETE", "/v1/files/" + fileID},
	} {
		if status, body := call(t, c.method, b.URL+c.path, "", nil, ""); status != 404 {
			t.Errorf("site B's alice: %s %s = %d %s", c.method, c.path, status, body)
		}
	}
	for _, path := range []string{"/v1/messages/batches", "/v1/files", "/v1/batches"} {
		if _, body := call(t, "GET", b.URL+path, "", nil, ""); strings.Contains(string(body), id) || strings.Contains(string(body), fileID) {
			t.Errorf("site B's list %s shows site A's: %s", path, body)
		}
	}
	if _, body := call(t, "GET", a.URL+"/v1/files/"+fileID+"/content", "", nil, ""); !strings.Contains(string(body), "req-0") {
		t.Errorf("site A's own file: %s", body)
	}
	runA.mu.Lock()
	ranA := len(runA.keys)
	runA.mu.Unlock()
	runB.mu.Lock()
	ranB := len(runB.keys)
	runB.mu.Unlock()
	if ranA != 3 || ranB != 0 {
		t.Fatalf("site A's worker ran %d items, site B's %d; want 3 and 0", ranA, ranB)
	}
	items, err := st.BatchItems(t.Context(), id)
	if err != nil || len(items) != 3 {
		t.Fatalf("items: %v %v", items, err)
	}
	if b, err := st.GetBatch(t.Context(), ledger.BatchOwner{Site: "site-a", KeyID: "alice"}, id); err != nil || b.Site != "site-a" {
		t.Fatalf("stored batch: %+v %v", b, err)
	}
}
