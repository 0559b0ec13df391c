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
