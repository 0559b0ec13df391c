package scim

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParseFilter(t *testing.T) {
	for in, want := range map[string]Filter{
		`userName eq "ada@example.com"`:     {Attr: "userName", Value: "ada@example.com"},
		`externalId EQ "00u1"`:              {Attr: "externalId", Value: "00u1"},
		`displayName eq "Eng \"Platform\""`: {Attr: "displayName", Value: `Eng "Platform"`},
	} {
		got, err := ParseFilter(in)
		if err != nil || got != want {
			t.Errorf("ParseFilter(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{`userName`, `userName co "a"`, `userName eq a`, `userName eq "a" and active eq true`} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q) accepted", bad)
		}
	}
	doc := map[string]any{"userName": "Ada@Example.com", "externalId": "X1", "emails": []any{map[string]any{"value": "a@b.c"}}}
	for f, want := range map[string]bool{
		`username eq "ada@example.com"`: true, // attribute names and userName values are case-insensitive
		`externalId eq "x1"`:            false,
		`externalId eq "X1"`:            true,
		`emails.value eq "A@B.C"`:       true,
		`displayName eq "x"`:            false,
	} {
		p, err := ParseFilter(f)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Matches(doc); got != want {
			t.Errorf("%s matches = %v, want %v", f, got, want)
		}
	}
}

func patch(t *testing.T, doc map[string]any, ops string) map[string]any {
	t.Helper()
	var req PatchRequest
	if err := json.Unmarshal([]byte(ops), &req); err != nil {
		t.Fatal(err)
	}
	if err := Apply(doc, req.Operations, map[string]bool{"emails": true, "members": true}); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestApplyPatch(t *testing.T) {
	// Okta: replace without a path, value an object.
	doc := patch(t, map[string]any{"userName": "a", "active": true}, `{"Operations":[{"op":"replace","value":{"active":false}}]}`)
	if doc["active"] != false {
		t.Errorf("okta deactivate: %v", doc)
	}
	// Entra ID: capitalised ops with paths, a filtered path and a string boolean.
	doc = patch(t, map[string]any{"emails": []any{map[string]any{"type": "work", "value": "old@x"}}, "name": map[string]any{"givenName": "g"}},
		`{"Operations":[{"op":"Replace","path":"emails[type eq \"work\"].value","value":"new@x"},
		{"op":"Add","path":"name.familyName","value":"f"},{"op":"Replace","path":"active","value":"False"},
		{"op":"Add","path":"emails[type eq \"home\"].value","value":"home@x"}]}`)
	want := map[string]any{"emails": []any{map[string]any{"type": "work", "value": "new@x"}, map[string]any{"type": "home", "value": "home@x"}},
		"name": map[string]any{"givenName": "g", "familyName": "f"}, "active": "False"}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("entra patch:\n got %v\nwant %v", doc, want)
	}
	if b, ok := boolOf(doc["active"]); !ok || b {
		t.Errorf("\"False\" read as %v, %v", b, ok)
	}
	// Members: add (deduplicated), remove by filter, remove by value list.
	doc = patch(t, map[string]any{"members": []any{map[string]any{"value": "u1"}}},
		`{"Operations":[{"op":"add","path":"members","value":[{"value":"u1"},{"value":"u2"},{"value":"u3"}]},
		{"op":"remove","path":"members[value eq \"u2\"]"},{"op":"Remove","path":"members","value":[{"value":"u1"}]}]}`)
	if !reflect.DeepEqual(doc["members"], []any{map[string]any{"value": "u3"}}) {
		t.Errorf("members: %v", doc["members"])
	}
	// Replace of members replaces the list; remove of an attribute drops it.
	doc = patch(t, map[string]any{"members": []any{map[string]any{"value": "u1"}}, "displayName": "x"},
		`{"Operations":[{"op":"replace","path":"members","value":[{"value":"u9"}]},{"op":"remove","path":"displayName"}]}`)
	if !reflect.DeepEqual(doc, map[string]any{"members": []any{map[string]any{"value": "u9"}}}) {
		t.Errorf("replace members: %v", doc)
	}
	// Bad operations are the client's error.
	var req PatchRequest
	_ = json.Unmarshal([]byte(`{"Operations":[{"op":"remove"}]}`), &req)
	if err := Apply(map[string]any{}, req.Operations, nil); err == nil {
		t.Error("remove without a path accepted")
	}
	_ = json.Unmarshal([]byte(`{"Operations":[{"op":"replace","value":"x"}]}`), &req)
	if err := Apply(map[string]any{}, req.Operations, nil); err == nil {
		t.Error("replace without path and a non-object value accepted")
	}
}
