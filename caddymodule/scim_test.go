package caddymodule

import (
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
)

func TestAuthSCIMTokenCaddyfile(t *testing.T) {
	var a Auth
	if err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("llm_auth {\nscim_token {env.SCIM_TOKEN}\n}")); err != nil {
		t.Fatal(err)
	}
	if a.SCIMToken != "{env.SCIM_TOKEN}" {
		t.Errorf("SCIMToken = %q", a.SCIMToken)
	}
	for _, bad := range []string{"llm_auth {\nscim_token\n}", "llm_auth {\nscim_token a b\n}"} {
		var b Auth
		err := b.UnmarshalCaddyfile(caddyfile.NewTestDispenser(bad))
		if err == nil || !strings.Contains(err.Error(), "scim_token") {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
