package caddymodule

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
)

func TestBreakerCaddyfile(t *testing.T) {
	var a Auth
	err := a.UnmarshalCaddyfile(caddyfile.NewTestDispenser(`llm_auth {
		key {env.K} {
			id alice
			breaker {
				repeat 4
				cycle off
				failing 8
				velocity 1.50/min
				key_velocity 12/min
				turns 400
				action pause
			}
		}
		workspace eng {
			breaker
		}
		group devs {
			breaker {
				action nudge
			}
		}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	want := ledger.BreakerRules{Repeat: 4, Cycle: -1, Failing: 8, VelocityCents: 150, KeyVelocityCents: 1200, Turns: 400, Action: "pause"}
	if got := a.Keys[0].Limits.ledger(nil).Breaker; got == nil || *got != want {
		t.Fatalf("key rules = %+v, want %+v", got, want)
	}
	if got := a.Workspaces[0].Limits.Breaker; got == nil || *got != (ledger.BreakerRules{}) {
		t.Fatalf("a bare breaker = %+v, want every default", got)
	}
	if got := a.Groups[0].Limits.Breaker; got == nil || got.Action != "nudge" {
		t.Fatalf("group rules = %+v", got)
	}
	for _, tc := range []struct{ in, want string }{
		{"repeat 1", "from 2 to 16"},
		{"repeat 40", "from 2 to 16"},
		{"velocity 2", "dollars a minute"},
		{"velocity -1/min", "dollars a minute"},
		{"action explode", "not warn, nudge, pause or stop"},
		{"sleep 3", "unrecognized breaker option"},
		{"turns", "give one value"},
	} {
		err := new(Auth).UnmarshalCaddyfile(caddyfile.NewTestDispenser("llm_auth {\nkey {env.K} {\nbreaker {\n" + tc.in + "\n}\n}\n}"))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestBreakerTripsCounted(t *testing.T) {
	app := &App{breaker: breaker.New(breaker.Options{})}
	reg := prometheus.NewRegistry()
	if err := registerBreakerMetrics(reg, app); err != nil {
		t.Fatal(err)
	}
	msgs := `{"role":"user","content":"go"}`
	for i := range 2 {
		id := fmt.Sprint("t", i)
		msgs += `,{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"Read","input":{"file_path":"/a"}}]}` +
			`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"same"}]}`
		app.breaker.Admit(context.Background(), &breaker.Turn{Format: breaker.FormatMessages, Body: []byte(`{"messages":[` + msgs + `]}`),
			Session: "s", KeyID: "k", Rules: &ledger.BreakerRules{Repeat: 2}})
	}
	{
		mfs, err := reg.Gather()
		if err != nil || len(mfs) != 1 || len(mfs[0].GetMetric()) != 20 {
			t.Fatalf("gathered %d families (%v), want one of 20 series", len(mfs), err)
		}
		found := false
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				labels := map[string]string{}
				for _, l := range m.GetLabel() {
					labels[l.GetName()] = l.GetValue()
				}
				if labels["pattern"] == "repeat" && labels["action"] == "warn" {
					found = m.GetCounter().GetValue() == 1
				} else if m.GetCounter().GetValue() != 0 {
					t.Errorf("series %v = %v, want 0", labels, m.GetCounter().GetValue())
				}
			}
		}
		if !found {
			t.Fatal("the repeat/warn trip was not counted")
		}
	}
}
