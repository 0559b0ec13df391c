package admincli

import (
	"strings"
	"testing"
)

// TestResolveWorkspace: an id is kept, a name gives the id of the one
// workspace of that name, and an unknown or ambiguous name is an error
// naming it and what would do.
func TestResolveWorkspace(t *testing.T) {
	list := []Workspace{{ID: "frontend", Name: "frontend"}, {ID: "wrkspc_a", Name: "research"},
		{ID: "wrkspc_b", Name: "ops"}, {ID: "wrkspc_c", Name: "ops"}}
	for v, want := range map[string]string{"frontend": "frontend", "research": "wrkspc_a", "wrkspc_b": "wrkspc_b"} {
		if got, err := ResolveWorkspace(list, v); err != nil || got != want {
			t.Errorf("%s: %q %v, want %q", v, got, err, want)
		}
	}
	for v, want := range map[string]string{
		"reserch": `no workspace named or with id "reserch" (known: frontend, research (wrkspc_a)`,
		"ops":     `2 workspaces are named "ops" (wrkspc_b, wrkspc_c); give the id`,
	} {
		if _, err := ResolveWorkspace(list, v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", v, err, want)
		}
	}
	if _, err := ResolveWorkspace(nil, "x"); err == nil || !strings.Contains(err.Error(), "has none") {
		t.Errorf("no workspaces: %v", err)
	}
}

func TestCheckModels(t *testing.T) {
	served := []string{"echo", "local", "claude"}
	if err := CheckModels(served, []string{"echo", "claude"}); err != nil {
		t.Error(err)
	}
	if err := CheckModels(served, []string{"echo", "lcoal"}); err == nil || !strings.Contains(err.Error(), `--models: "lcoal" is not a model of this gateway (it serves: echo, local, claude)`) {
		t.Errorf("one unknown: %v", err)
	}
	if err := CheckModels(served, []string{"a", "b"}); err == nil || !strings.Contains(err.Error(), `"a", "b" are not models`) {
		t.Errorf("two unknown: %v", err)
	}
}
