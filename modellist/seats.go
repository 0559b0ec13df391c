package modellist

// Seat pass-through and stream failover settings of an entry: whose
// credential an upstream call carries, and how long a stream may take to
// start before the next deployment is tried.

import (
	"fmt"
	"strings"

	"gopkg.in/yaml.v3"
)

// seat reads passthrough_auth and passthrough_budget. It runs before the
// api_key rules, which a pass-through entry is exempt from: its calls
// carry each caller's own credential, never one of the file's.
func (p *parser) seat(d *Deployment, fs map[string]field, w where) {
	if f, ok := fs["passthrough_auth"]; ok && !isNull(deref(f.val)) {
		d.PassthroughAuth, _ = p.flag(f.val, w.sub("passthrough_auth"),
			"true (each caller's own provider credential goes upstream; the gateway key travels in X-Modelgate-Key) or false")
	}
	if f, ok := fs["passthrough_budget"]; ok && !isNull(deref(f.val)) {
		d.PassthroughBudget, _ = p.flag(f.val, w.sub("passthrough_budget"),
			"true (a seat's notional cost counts against the key's budgets) or false (reports only, the default)")
		if !d.PassthroughAuth {
			p.errorf(f.val, w.sub("passthrough_budget"), "applies only with passthrough_auth: true; remove it or set passthrough_auth")
		}
	}
	if f, ok := fs["first_token_timeout"]; ok {
		d.FirstTokenTimeout, _ = p.duration(f.val, w.sub("first_token_timeout"), false)
	}
	if f, ok := fs["assistant_prefill"]; ok && !isNull(deref(f.val)) {
		if s, ok := p.scalar(f.val, w.sub("assistant_prefill")); ok {
			switch s {
			case "continue_final_message", "prefix", "trailing":
				d.AssistantPrefill = s
				if d.Kind != KindOpenAI {
					p.errorf(f.val, w.sub("assistant_prefill"), "is for chat-completions backends (openai/ or a compatible api_base); %s/ continues a stream without it: remove it", d.Provider)
				}
			default:
				p.errorf(f.val, w.sub("assistant_prefill"), "%q is not a choice: continue_final_message (vLLM, SGLang), prefix (DeepSeek, Mistral) or trailing (llama.cpp's server)", s)
			}
		}
	}
}

// seatRules checks a pass-through entry once its kind and key are known.
func (p *parser) seatRules(d *Deployment, fs map[string]field, key string, keyNode *yaml.Node, w where) bool {
	if !d.PassthroughAuth {
		return true
	}
	pw := w.sub("passthrough_auth")
	if d.Kind != KindAnthropic && d.Kind != KindOpenAI {
		p.errorf(deref(fs["passthrough_auth"].val), pw, "%s/ signs its calls with the gateway's own account; passthrough_auth works with anthropic/ and openai/ (or an OpenAI-compatible api_base): remove it", d.Provider)
		return false
	}
	if key != "" {
		p.errorf(keyNode, w.sub("api_key"), "a passthrough_auth entry sends each caller's own credential and never this key; remove api_key")
		return false
	}
	return true
}

// flag reads a yes/no setting.
func (p *parser) flag(n *yaml.Node, w where, choices string) (bool, bool) {
	s, ok := p.scalar(n, w)
	if !ok {
		return false, false
	}
	switch strings.ToLower(s) {
	case "true", "on", "yes":
		return true, true
	case "false", "off", "no":
		return false, true
	}
	p.errorf(n, w, "%q is not a choice: %s", s, choices)
	return false, false
}

// seatAliases checks that the entries of an alias agree on
// passthrough_auth and passthrough_budget: a request is admitted for an
// alias, and whether its caller's credential goes upstream, and whether
// its cost counts against budgets, must not depend on which of the
// alias's deployments the balancer picks (a budget read from one entry
// and a record counted by another would spend without a reservation).
func (p *parser) seatAliases(c *Config) {
	for _, alias := range c.aliases {
		ds := c.byAlias[alias]
		for _, d := range ds[1:] {
			field, got, first := "passthrough_auth", d.PassthroughAuth, ds[0].PassthroughAuth
			if got == first {
				field, got, first = "passthrough_budget", d.PassthroughBudget, ds[0].PassthroughBudget
			}
			if got != first {
				w := where{entry: fmt.Sprintf("model_list[%d] (model_name %q)", d.Index, alias), field: "proxy_params." + field}
				p.errorf(nil, w, "is %t but model_list[%d] of the same alias has %t; every entry of an alias must agree: set it on all of them or none",
					got, ds[0].Index, first)
				break
			}
		}
	}
}
