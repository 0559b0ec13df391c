package caddymodule

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

func TestAuthCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    Auth
		wantErr string
	}{
		{
			name: "full",
			input: `llm_auth {
				key {env.ALICE_KEY} {
					id alice
					workspace frontend
					models claude local
				}
				key {env.CI_KEY}
				admin_key {env.ADMIN}
			}`,
			want: Auth{
				Keys: []KeyConfig{
					{Key: "{env.ALICE_KEY}", ID: "alice", Workspace: "frontend", Models: []string{"claude", "local"}},
					{Key: "{env.CI_KEY}"},
				},
				AdminKeys: []KeyConfig{{Key: "{env.ADMIN}"}},
			},
		},
		{
			name:  "admin paths",
			input: "llm_auth {\nadmin_key {env.ADMIN}\nadmin_paths /metrics /debug/*\n}",
			want:  Auth{AdminKeys: []KeyConfig{{Key: "{env.ADMIN}"}}, AdminPaths: []string{"/metrics", "/debug/*"}},
		},
		{name: "admin paths empty", input: "llm_auth {\nadmin_paths\n}", wantErr: "admin_paths: list at least one path"},
		{
			name: "limits",
			input: `llm_auth {
				key {env.ALICE_KEY} {
					id alice
					workspace frontend
					budget 50 monthly
					soft_budget 40
					session_budget 2.50
					rpm 60
					tpm 200000
					max_parallel 4
				}
				workspace frontend {
					budget 500 weekly
					rpm 600
					count_agent_reported
				}
			}`,
			want: Auth{
				Keys: []KeyConfig{{Key: "{env.ALICE_KEY}", ID: "alice", Workspace: "frontend", Limits: &LimitsConfig{
					BudgetCents: ledger.Cents(5000), BudgetPeriod: "monthly", SoftBudgetCents: 4000, SessionBudgetCents: ledger.Cents(250), RPM: 60, TPM: 200000, MaxParallel: 4}}},
				Workspaces: []WorkspaceConfig{{Name: "frontend", Limits: &LimitsConfig{BudgetCents: ledger.Cents(50000), BudgetPeriod: "weekly", RPM: 600}, CountAgentReported: true}},
			},
		},
		{
			// budget 0 stops paid use; it is kept, not read as "no budget".
			name:  "budget zero",
			input: "llm_auth {\nkey {env.A} {\nbudget 0 monthly\nsession_budget $0\n}\n}",
			want: Auth{Keys: []KeyConfig{{Key: "{env.A}", Limits: &LimitsConfig{
				BudgetCents: ledger.Cents(0), BudgetPeriod: "monthly", SessionBudgetCents: ledger.Cents(0)}}}},
		},
		{name: "budget largest", input: "llm_auth {\nkey {env.A} {\nbudget 1000000 total\n}\n}",
			want: Auth{Keys: []KeyConfig{{Key: "{env.A}", Limits: &LimitsConfig{BudgetCents: ledger.Cents(money.MaxBudgetCents), BudgetPeriod: "total"}}}}},
		{name: "budget NaN", input: "llm_auth {\nkey {env.A} {\nbudget NaN monthly\n}\n}", wantErr: "budget: "},
		{name: "budget Inf", input: "llm_auth {\nworkspace w {\nbudget +Inf monthly\n}\n}", wantErr: "budget: "},
		{name: "budget negative", input: "llm_auth {\nkey {env.A} {\nbudget -5 monthly\n}\n}", wantErr: "budget: "},
		{name: "budget overflow", input: "llm_auth {\nkey {env.A} {\nbudget 10000000 monthly\n}\n}", wantErr: "budget: \"10000000\" is over the largest budget"},
		{name: "budget sub-cent", input: "llm_auth {\nkey {env.A} {\nbudget 0.001 monthly\n}\n}", wantErr: "budget: \"0.001\" is a fraction of a cent"},
		{name: "soft_budget NaN", input: "llm_auth {\nkey {env.A} {\nsoft_budget NaN\n}\n}", wantErr: "soft_budget: "},
		{name: "soft_budget zero", input: "llm_auth {\nkey {env.A} {\nsoft_budget 0\n}\n}", wantErr: "soft_budget: must be at least 0.01"},
		{name: "session_budget overflow", input: "llm_auth {\nworkspace w {\nsession_budget 92233720368\n}\n}", wantErr: "session_budget: "},
		{name: "session_budget exponent", input: "llm_auth {\nkey {env.A} {\nsession_budget 1e3\n}\n}", wantErr: "session_budget: "},
		{name: "budget without period", input: "llm_auth {\nkey {env.A} {\nbudget 50\n}\n}", wantErr: "give a period"},
		{name: "budget bad period", input: "llm_auth {\nkey {env.A} {\nbudget 50 hourly\n}\n}", wantErr: `period "hourly"`},
		{name: "budget not dollars", input: "llm_auth {\nkey {env.A} {\nbudget fifty monthly\n}\n}", wantErr: "not an amount"},
		{name: "rpm not a count", input: "llm_auth {\nworkspace w {\nrpm -3\n}\n}", wantErr: "not a positive whole number"},
		{name: "unknown option", input: `llm_auth { keys x }`, wantErr: `unrecognized llm_auth option "keys"`},
		{name: "key without value", input: "llm_auth {\nkey\n}", wantErr: "missing the key"},
		{name: "secret never echoed", input: `llm_auth { key sk-live-secret extra }`, wantErr: "too many arguments"},
		{name: "unknown key option", input: "llm_auth {\nkey {env.A} {\nrole admin\n}\n}", wantErr: `unrecognized key option "role"`},
		{name: "empty models", input: "llm_auth {\nkey {env.A} {\nmodels\n}\n}", wantErr: "at least one alias"},
		{name: "arguments on directive", input: `llm_auth foo`, wantErr: "wrong argument count"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var a Auth
			err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				if strings.Contains(err.Error(), "sk-live-secret") {
					t.Fatalf("error echoes the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, tc.want) {
				t.Fatalf("got %+v\nwant %+v", a, tc.want)
			}
		})
	}
}

func TestGatewayCaddyfile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		input   string
		want    Gateway
		wantErr string
	}{
		{name: "inline argument", input: `llm_gateway models.yaml`, wantErr: "takes no arguments"},
		{
			name: "block",
			input: `llm_gateway {
				models /etc/models.yaml
				max_request_body 1MB
				default_max_tokens 1024
				timeout 90s
				insecure_no_auth
			}`,
			want: Gateway{Models: "/etc/models.yaml", MaxRequestBody: 1000000, DefaultMaxTokens: 1024, Timeout: caddy.Duration(90e9), InsecureNoAuth: true},
		},
		{name: "models twice", input: "llm_gateway {\nmodels a.yaml\nmodels b.yaml\n}", wantErr: "already specified"},
		{name: "bad size", input: "llm_gateway {\nmax_request_body lots\n}", wantErr: "max_request_body"},
		{name: "body memory", input: "llm_gateway {\nmodels m.yaml\nmax_body_memory 512MiB\n}", want: Gateway{Models: "m.yaml", MaxBodyMemory: 512 << 20}},
		{name: "bad body memory", input: "llm_gateway {\nmax_body_memory plenty\n}", wantErr: "max_body_memory"},
		{name: "websocket lifetime", input: "llm_gateway {\nmodels m.yaml\nwebsocket_lifetime 30m\n}", want: Gateway{Models: "m.yaml", WebSocketLifetime: caddy.Duration(30 * time.Minute)}},
		{name: "bad websocket lifetime", input: "llm_gateway {\nwebsocket_lifetime 0s\n}", wantErr: "websocket_lifetime: want a positive duration"},
		{name: "bad tokens", input: "llm_gateway {\ndefault_max_tokens -1\n}", wantErr: "default_max_tokens"},
		{name: "bad timeout", input: "llm_gateway {\ntimeout soon\n}", wantErr: "timeout"},
		{name: "per-key concurrency", input: "llm_gateway {\nmodels m.yaml\nmax_concurrent_per_key 8\n}", want: Gateway{Models: "m.yaml", MaxConcurrentPerKey: 8}},
		{name: "bad per-key concurrency", input: "llm_gateway {\nmax_concurrent_per_key many\n}", wantErr: "max_concurrent_per_key"},
		{name: "unknown", input: "llm_gateway {\nmodel x\n}", wantErr: `unrecognized llm_gateway option "model"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var g Gateway
			err := g.UnmarshalCaddyfile(caddyfile.NewTestDispenser(tc.input))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(g, tc.want) {
				t.Fatalf("got %+v\nwant %+v", g, tc.want)
			}
		})
	}
}

// TestGatewayValidateBodyMemory: a body memory too small to read one body
// at the limit is refused, naming the field and the least it takes.
func TestGatewayValidateBodyMemory(t *testing.T) {
	for _, tc := range []struct {
		g       Gateway
		wantErr string
	}{
		{g: Gateway{MaxBodyMemory: 64 << 20}, wantErr: "max_body_memory: 67108864 bytes cannot hold one body at max_request_body 33554432"},
		{g: Gateway{MaxBodyMemory: 64 << 20, MaxRequestBody: 1 << 20}},
		{g: Gateway{MaxBodyMemory: 3 << 20, MaxRequestBody: 1 << 20}, wantErr: "give at least 4194304"},
		{g: Gateway{MaxBodyMemory: -1}, wantErr: "max_body_memory: must not be negative"},
		{g: Gateway{}},
	} {
		err := tc.g.Validate()
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%+v: err = %v, want %q", tc.g, err, tc.wantErr)
		}
	}
}

func TestAdminCaddyfile(t *testing.T) {
	var a Admin
	err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser("llm_admin {\nupstream https://api.anthropic.com\nadmin_api_key {env.ADMIN_API_KEY}\n}"))
	if err != nil {
		t.Fatal(err)
	}
	if a.Upstream != "https://api.anthropic.com" || a.AdminAPIKey != "{env.ADMIN_API_KEY}" {
		t.Fatalf("got %+v", a)
	}
	var b Admin
	err = b.UnmarshalCaddyfile(caddyfile.NewTestDispenser("llm_admin {\nupstream a\nupstream b\n}"))
	if err == nil || !strings.Contains(err.Error(), "already specified") {
		t.Fatalf("duplicate upstream: %v", err)
	}
}

func TestAppOption(t *testing.T) {
	for _, tc := range []struct {
		input, wantErr, wantJSON string
	}{
		{input: "modelgate {\nledger sqlite /tmp/l.db\n}", wantJSON: `{"ledger":{"driver":"sqlite","dsn":"/tmp/l.db"}}`},
		{input: "modelgate {\nledger postgres {env.DATABASE_URL}\nqueue_size 500\n}", wantJSON: `{"ledger":{"driver":"postgres","dsn":"{env.DATABASE_URL}"},"queue_size":500}`},
		{input: "modelgate {\nledger mysql x\n}", wantErr: `unknown store "mysql"`},
		{input: "modelgate {\nledger\n}", wantErr: "ledger: want"},
		{input: "modelgate {\nqueue_size 0\n}", wantErr: "queue_size"},
		{input: "modelgate {\nlimits redis {env.REDIS_URL} {\nslot_lease 90s\n}\n}", wantJSON: `{"limits":{"driver":"redis","url":"{env.REDIS_URL}","slot_lease":90000000000}}`},
		{input: "modelgate {\nlimits local {\nslot_lease 500ms\n}\n}", wantErr: "at least 1s"},
		{input: "modelgate {\nlimits local {\nlease 5m\n}\n}", wantErr: `unknown option "lease"`},
	} {
		v, err := parseAppOption(caddyfile.NewTestDispenser(tc.input), nil)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%q: err = %v, want %q", tc.input, err, tc.wantErr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.input, err)
		}
		app, ok := v.(httpcaddyfile.App)
		if !ok || app.Name != "modelgate" || string(app.Value) != tc.wantJSON {
			t.Errorf("%q: got %+v, want %s", tc.input, v, tc.wantJSON)
		}
	}
}
