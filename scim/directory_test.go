package scim

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// scimServer serves a Handler on a fresh SQLite ledger, with the clock
// now (nil: the real one), and returns it with a function that calls it
// with the token and reads the JSON answer.
func scimServer(t *testing.T, now func() time.Time) (*Handler, func(method, path, body string) (int, map[string]any)) {
	t.Helper()
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	return scimServerOn(t, store, now)
}

// scimServerOn is scimServer over store.
func scimServerOn(t *testing.T, store ledger.Store, now func() time.Time) (*Handler, func(method, path, body string) (int, map[string]any)) {
	t.Helper()
	const token = "scim-test-token-0123456789"
	h := &Handler{Token: token, Source: fixedStore{store.(ledger.ControlStore)}, Now: now}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, func(method, path, body string) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/scim+json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
}

// TestLookupFollowsProvisioning: sign-in's view of a person follows what
// the IdP pushed: unknown until created, groups from pushed groups, and
// inactive after an Okta-style deactivation.
func TestLookupFollowsProvisioning(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, do := scimServer(t, func() time.Time { return now })
	// Each step waits out the directory view's lifetime, as sign-in would.
	later := func() { now = now.Add(directoryTTL) }
	call := func(method, path, body string) string {
		t.Helper()
		status, out := do(method, path, body)
		if status >= 300 {
			t.Fatalf("%s %s: %d %v", method, path, status, out)
		}
		id, _ := out["id"].(string)
		return id
	}
	ctx := context.Background()
	if _, found := h.Lookup(ctx, "dana@example.com", ""); found {
		t.Fatal("found a person SCIM never provisioned")
	}
	uid := call("POST", "/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"Dana@example.com","externalId":"00u1","active":true}`)
	if _, found := h.Lookup(ctx, "dana@example.com", ""); found {
		t.Fatal("a view younger than directoryTTL was read again: the cache does not hold")
	}
	later()
	e, found := h.Lookup(ctx, "dana@example.com", "")
	if !found || !e.Active || e.Groups != nil {
		t.Fatalf("after create: %+v found=%v; want active, no group override", e, found)
	}
	call("POST", "/scim/v2/Groups", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:Group"],"displayName":"engineering","members":[{"value":"`+uid+`"}]}`)
	later()
	if e, _ = h.Lookup(ctx, "", "00u1"); !slices.Equal(e.Groups, []string{"engineering"}) {
		t.Fatalf("by subject after group push: groups=%v, want [engineering]", e.Groups)
	}
	call("PATCH", "/scim/v2/Users/"+uid, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`)
	later()
	if e, found = h.Lookup(ctx, "dana@example.com", ""); !found || e.Active || e.Deleted {
		t.Fatalf("after deactivation: %+v found=%v, want found and inactive", e, found)
	}

	// DELETE leaves a tombstone: the person is still found, and refused,
	// by userName and by subject.
	call("DELETE", "/scim/v2/Users/"+uid, "")
	later()
	for _, who := range [][2]string{{"DANA@example.com", ""}, {"", "00u1"}} {
		if e, found = h.Lookup(ctx, who[0], who[1]); !found || e.Active || !e.Deleted {
			t.Fatalf("after delete, %q: %+v found=%v, want a deleted person", who, e, found)
		}
	}
	// Provisioned again: a new user, active, with no tombstone left.
	call("POST", "/scim/v2/Users", `{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"dana@example.com","externalId":"00u1","active":true}`)
	later()
	if e, found = h.Lookup(ctx, "", "00u1"); !found || !e.Active || e.Deleted {
		t.Fatalf("re-created: %+v found=%v, want active", e, found)
	}
}

// TestLookupSubjectRefusalWins: a person SCIM deleted or deactivated
// (found by their ID token's subject) whose email claim names another,
// live, user is refused, not let in as that user.
func TestLookupSubjectRefusalWins(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	h, do := scimServer(t, func() time.Time { return now })
	create := func(body string) string {
		t.Helper()
		status, out := do("POST", "/scim/v2/Users", body)
		if status != http.StatusCreated {
			t.Fatalf("create: %d %v", status, out)
		}
		id, _ := out["id"].(string)
		return id
	}
	create(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"eve@example.com","externalId":"00u2","active":true}`)
	mallory := create(`{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"userName":"mallory@example.com","externalId":"00u3","active":true}`)
	ctx := context.Background()
	for _, step := range []struct{ method, body, want string }{
		{"PATCH", `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","value":{"active":false}}]}`, "inactive"},
		{"DELETE", "", "deleted"},
	} {
		if status, out := do(step.method, "/scim/v2/Users/"+mallory, step.body); status >= 300 {
			t.Fatalf("%s: %d %v", step.method, status, out)
		}
		now = now.Add(directoryTTL)
		e, found := h.Lookup(ctx, "eve@example.com", "00u3")
		if !found || e.Active || (step.want == "deleted") != e.Deleted {
			t.Fatalf("%s subject, another user's email: %+v found=%v; want refused as %s", step.want, e, found, step.want)
		}
	}
	if e, found := h.Lookup(ctx, "eve@example.com", "00u2"); !found || !e.Active {
		t.Fatalf("eve herself: %+v found=%v; want active", e, found)
	}
}
