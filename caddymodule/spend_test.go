package caddymodule

import (
	"strings"
	"testing"
)

// An at_cap downgrade to an alias a gateway has and finds not free is
// refused, whether the group rule or the gateway is provisioned first;
// the API's check also refuses an alias no gateway has (hostile review 4,
// finding 6).
func TestDowngradeTargetsRefuseAliasesThatAreNotFree(t *testing.T) {
	gateway := func(alias string) (bool, string) {
		switch alias {
		case "local":
			return true, ""
		case "unpriced":
			return true, `alias "unpriced": openai/gpt-x is a cloud model; an unpriced one is not free`
		}
		return false, ""
	}
	var none *downgradeTargets
	if why := none.check("anything"); why != "" {
		t.Errorf("no app: %q", why)
	}
	groupsFirst := &downgradeTargets{}
	if err := groupsFirst.addGroups(map[string]string{"eng": "local", "ops": "unpriced"}); err != nil {
		t.Fatalf("before any gateway: %v", err)
	}
	if err := groupsFirst.addGateway(gateway); err == nil || !strings.Contains(err.Error(), "group ops: at_cap downgrade unpriced") || !strings.Contains(err.Error(), "not free") {
		t.Errorf("the gateway after the groups: %v", err)
	}
	gatewayFirst := &downgradeTargets{}
	if err := gatewayFirst.addGateway(gateway); err != nil {
		t.Fatal(err)
	}
	if err := gatewayFirst.addGroups(map[string]string{"eng": "local"}); err != nil {
		t.Errorf("a free alias: %v", err)
	}
	if err := gatewayFirst.addGroups(map[string]string{"ops": "unpriced"}); err == nil || !strings.Contains(err.Error(), "group ops") {
		t.Errorf("the groups after the gateway: %v", err)
	}
	for alias, want := range map[string]string{"local": "", "unpriced": `"unpriced" is not free`, "nope": `no alias "nope"`} {
		if why := gatewayFirst.check(alias); (want == "" && why != "") || !strings.Contains(why, want) {
			t.Errorf("check(%s) = %q, want %q", alias, why, want)
		}
	}
}
