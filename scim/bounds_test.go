package scim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStringsAreBounded: a userName (or any other string) past its bound
// is refused with 400 invalidValue naming the field and the bound, on
// create, on PUT and on PATCH, for users and groups; nothing is stored.
func TestStringsAreBounded(t *testing.T) {
	_, call := scimServer(t, nil)
	long := func(n int) string { return strings.Repeat("a", n) }
	status, created := call("POST", "/scim/v2/Users", `{"userName":"ok@example.com"}`)
	if status != http.StatusCreated {
		t.Fatalf("a user within the bounds: %d %v", status, created)
	}
	id, _ := created["id"].(string)
	status, group := call("POST", "/scim/v2/Groups", `{"displayName":"eng"}`)
	if status != http.StatusCreated {
		t.Fatalf("a group within the bounds: %d %v", status, group)
	}
	gid, _ := group["id"].(string)
	for _, tc := range []struct{ method, path, body, field string }{
		{"POST", "/scim/v2/Users", `{"userName":"` + long(70000) + `"}`, "userName: at most 256 characters (got 70000)"},
		{"POST", "/scim/v2/Users", `{"userName":"x@example.com","externalId":"` + long(257) + `"}`, "externalId: at most 256"},
		{"POST", "/scim/v2/Users", `{"userName":"x@example.com","displayName":"` + long(1025) + `"}`, "displayName: at most 1024"},
		{"POST", "/scim/v2/Users", `{"userName":"x@example.com","name":{"givenName":"` + long(1025) + `"}}`, "name.givenName: at most 1024"},
		{"POST", "/scim/v2/Users", `{"userName":"x@example.com","emails":[{"value":"` + long(300) + `"}]}`, "emails.value: at most 256"},
		{"PUT", "/scim/v2/Users/" + id, `{"userName":"` + long(257) + `"}`, "userName: at most 256"},
		{"PATCH", "/scim/v2/Users/" + id, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"userName","value":"` + long(257) + `"}]}`, "userName: at most 256"},
		{"POST", "/scim/v2/Groups", `{"displayName":"` + long(257) + `"}`, "displayName: at most 256"},
		{"PATCH", "/scim/v2/Groups/" + gid, `{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"add","path":"members","value":[{"value":"` + long(257) + `"}]}]}`, "members.value: at most 256"},
	} {
		status, out := call(tc.method, tc.path, tc.body)
		detail, _ := out["detail"].(string)
		if status != http.StatusBadRequest || out["scimType"] != "invalidValue" || !strings.Contains(detail, tc.field) {
			t.Errorf("%s %s (%s): %d %v; want 400 invalidValue naming %q", tc.method, tc.path, tc.field, status, out, tc.field)
		}
	}
	if _, list := call("GET", "/scim/v2/Users", ""); list["totalResults"] != float64(1) {
		t.Errorf("users stored: %v, want only the one within the bounds", list["totalResults"])
	}
}

// FuzzResourceFrom: whatever JSON object a provider sends, reading it as
// a user or a group never panics, and what is accepted is within every
// bound and has its required name.
func FuzzResourceFrom(f *testing.F) {
	f.Add([]byte(`{"userName":"a@example.com","name":{"givenName":"A"},"emails":[{"value":"a@example.com","primary":"True"}],"active":"False"}`))
	f.Add([]byte(`{"displayName":"eng","members":[{"value":"u1","display":"A"}]}`))
	f.Add([]byte(`{"userName":"` + strings.Repeat("é", 257) + `"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var in map[string]any
		if json.Unmarshal(b, &in) != nil {
			return
		}
		if u, err := userFrom(in); err == nil {
			if strings.TrimSpace(u.UserName) == "" || u.bounded() != nil {
				t.Fatalf("accepted user %+v", u)
			}
		}
		if json.Unmarshal(b, &in) != nil {
			return
		}
		if g, err := groupFrom(in); err == nil {
			if strings.TrimSpace(g.DisplayName) == "" || g.bounded() != nil {
				t.Fatalf("accepted group %+v", g)
			}
		}
	})
}
