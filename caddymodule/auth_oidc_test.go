package caddymodule

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	"github.com/modelgate/modelgate/ledger"
)

func TestAuthOIDCCaddyfile(t *testing.T) {
	budget := int64(10000)
	for _, tc := range []struct {
		name, input, wantErr string
		want                 Auth
	}{
		{name: "full", input: `llm_auth {
			admin_key {env.ADMIN}
			oidc {
				issuer https://example.okta.com
				client_id abc
				client_secret {env.OIDC_SECRET}
				groups_claim roles
				scopes openid email groups
				session_ttl 1h
				key_ttl 30m
				name Okta
				redirect_url https://gw.example.com/auth/oidc/callback
			}
			group admins {
				role admin
			}
			group eng {
				workspace eng
				models claude coder
				budget 100 monthly
				at_cap downgrade local
				leads lead@example.com
			}
			group ops {
				at_cap downgrade mini max_price 0.15 0.60 allowance 5
			}
		}`, want: Auth{AdminKeys: []KeyConfig{{Key: "{env.ADMIN}"}},
			OIDC: &OIDCConfig{Issuer: "https://example.okta.com", ClientID: "abc", ClientSecret: "{env.OIDC_SECRET}", GroupsClaim: "roles",
				Scopes: []string{"openid", "email", "groups"}, SessionTTL: caddy.Duration(time.Hour), KeyTTL: caddy.Duration(30 * time.Minute),
				Name: "Okta", RedirectURL: "https://gw.example.com/auth/oidc/callback"},
			Groups: []GroupConfig{{Name: "admins", Role: "admin"},
				{Name: "eng", Workspace: "eng", Models: []string{"claude", "coder"}, Limits: &LimitsConfig{BudgetCents: &budget, BudgetPeriod: "monthly"},
					Downgrade: "local", Leads: []string{"lead@example.com"}},
				{Name: "ops", Downgrade: "mini", DowngradeBound: &ledger.DowngradeBound{MaxInputPico: 150_000, MaxOutputPico: 600_000, AllowanceCents: 500}}}}},
		{name: "bad at_cap", input: "llm_auth {\ngroup g {\nat_cap downgrade\n}\n}", wantErr: "group g: at_cap: want `at_cap refuse` or `at_cap downgrade <alias> [max_price"},
		{name: "priced at_cap without allowance", input: "llm_auth {\ngroup g {\nat_cap downgrade mini max_price 0.15 0.60\n}\n}", wantErr: "group g: at_cap downgrade mini: a priced downgrade needs both"},
		{name: "no leads", input: "llm_auth {\ngroup g {\nleads\n}\n}", wantErr: "group g: leads: name at least one person"},
		{name: "no issuer", input: "llm_auth {\noidc {\nclient_id x\n}\n}", wantErr: "issuer and client_id are required"},
		{name: "bad role", input: "llm_auth {\ngroup g {\nrole owner\n}\n}", wantErr: `role "owner" is not admin, auditor or member`},
		{name: "short key_ttl", input: "llm_auth {\noidc {\nissuer https://i\nclient_id x\nkey_ttl 1s\n}\n}", wantErr: "oidc key_ttl"},
		{name: "unknown option", input: "llm_auth {\noidc {\nissuer https://i\nclient_id x\nsecret y\n}\n}", wantErr: `unrecognized oidc option "secret"`},
		{name: "group twice", input: "llm_auth {\ngroup g\ngroup g\n}", wantErr: "group g: given twice"},
	} {
		var a Auth
		err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s: %v, want %q", tc.name, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !reflect.DeepEqual(a, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.name, a, tc.want)
		}
	}
}
