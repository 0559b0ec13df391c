package admincli

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestFlagsBudgets: the CLI refuses what the gateway would misread (an
// amount past the bound wrapped to a negative budget, NaN) naming the
// flag, keeps a budget of 0, and sends null for none.
func TestFlagsBudgets(t *testing.T) {
	for _, tc := range []struct {
		f    Flags
		want string
	}{
		{Flags{Budget: "50:monthly"}, `{"budget":{"amount":"5000","period":"monthly"}}`},
		{Flags{Budget: "0:total"}, `{"budget":{"amount":"0","period":"total"}}`},
		{Flags{Budget: "none", SessionBudget: "none"}, `{"budget":null,"session_budget":null}`},
		{Flags{SessionBudget: "2.50", SoftBudget: "$40"}, `{"session_budget":"250","soft_budget":"4000"}`},
	} {
		m, err := tc.f.Fields()
		if err != nil {
			t.Fatalf("%+v: %v", tc.f, err)
		}
		if b, _ := json.Marshal(m); string(b) != tc.want {
			t.Errorf("%+v: %s, want %s", tc.f, b, tc.want)
		}
	}
	for _, tc := range []struct {
		f    Flags
		flag string
	}{
		{Flags{Budget: "10000000:monthly"}, "--budget"},
		{Flags{Budget: "1e12:monthly"}, "--budget"},
		{Flags{Budget: "NaN:monthly"}, "--budget"},
		{Flags{Budget: "-5:monthly"}, "--budget"},
		{Flags{Budget: "0.001:monthly"}, "--budget"},
		{Flags{Budget: "50"}, "--budget"},
		{Flags{SoftBudget: "Inf"}, "--soft-budget"},
		{Flags{SessionBudget: "99999999999"}, "--session-budget"},
	} {
		if _, err := tc.f.Fields(); err == nil || !strings.HasPrefix(err.Error(), tc.flag+":") {
			t.Errorf("%+v: %v, want an error naming %s", tc.f, err, tc.flag)
		}
	}
}

// TestWriteKeysNamesWorkspaces: `keys list` shows a runtime workspace by
// its name, not its wrkspc_ id; a workspace it cannot name (archived, or
// the list unreadable) still shows by id.
func TestWriteKeysNamesWorkspaces(t *testing.T) {
	ws, gone := "wrkspc_01abc", "wrkspc_02old"
	keys := []Key{
		{ID: "apikey_1", Name: "bob-laptop", WorkspaceID: &ws, Status: "active"},
		{ID: "apikey_2", Name: "oidc: carol@example.com", WorkspaceID: &gone, Status: "active"},
		{ID: "apikey_3", Name: "ci", Status: "active"},
	}
	var b strings.Builder
	if err := WriteKeys(&b, keys, map[string]string{ws: "platform"}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	for i, want := range []string{"bob-laptop  platform", "oidc: carol@example.com  " + gone, "ci  -"} {
		if !strings.Contains(strings.Join(strings.Fields(lines[i+1]), "  "), strings.Join(strings.Fields(want), "  ")) {
			t.Errorf("row %d: %q, want %q", i+1, lines[i+1], want)
		}
	}
	if strings.Contains(b.String(), ws) {
		t.Errorf("the named workspace's id is printed:\n%s", b.String())
	}
}
