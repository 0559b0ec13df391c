package caddymodule

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/secretscan"
)

// Secrets is llm_gateway's secrets block: the secret firewall's action
// for the entries that set none in the models file, and per alias.
type Secrets struct {
	// Action applies to every entry without its own secrets: action;
	// unset, the default is redact for cloud entries and log for local
	// ones.
	Action string `json:"action,omitempty"`
	// Aliases sets the action of every entry of an alias, over the
	// models file.
	Aliases map[string]string `json:"aliases,omitempty"`
}

// parseSecrets reads
//
//	secrets {
//		action redact|block|log|off
//		alias <model_name> redact|block|log|off
//	}
func parseSecrets(d *caddyfile.Dispenser) (*Secrets, error) {
	s := &Secrets{}
	if d.NextArg() {
		return nil, d.Errf("secrets takes a block, not %q; write secrets { action redact }", d.Val())
	}
	action := func(word string) (string, error) {
		if _, ok := modellist.ParseSecretsAction(word); !ok {
			return "", d.Errf("secrets: unknown action %q; use %s", word, strings.Join(modellist.SecretsActions(), ", "))
		}
		return strings.ToLower(word), nil
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "action":
			var w string
			if !d.AllArgs(&w) {
				return nil, d.ArgErr()
			}
			a, err := action(w)
			if err != nil {
				return nil, err
			}
			s.Action = a
		case "alias":
			var name, w string
			if !d.AllArgs(&name, &w) {
				return nil, d.Errf("secrets: alias takes a model_name and an action, e.g. alias claude-sonnet block")
			}
			a, err := action(w)
			if err != nil {
				return nil, err
			}
			if s.Aliases == nil {
				s.Aliases = map[string]string{}
			}
			s.Aliases[name] = a
		default:
			return nil, d.Errf("unrecognized secrets option %q (known: action, alias)", d.Val())
		}
	}
	return s, nil
}

// validate checks the JSON config's words, and that each alias named is
// one the models file has.
func (s *Secrets) validate(cfg *modellist.Config) error {
	if s == nil {
		return nil
	}
	if _, ok := modellist.ParseSecretsAction(s.Action); s.Action != "" && !ok {
		return fmt.Errorf("secrets: action: unknown action %q; use %s", s.Action, strings.Join(modellist.SecretsActions(), ", "))
	}
	known := map[string]bool{}
	for _, a := range cfg.Aliases() {
		known[a] = true
	}
	for alias, a := range s.Aliases {
		if _, ok := modellist.ParseSecretsAction(a); !ok {
			return fmt.Errorf("secrets: alias %s: unknown action %q; use %s", alias, a, strings.Join(modellist.SecretsActions(), ", "))
		}
		if !known[alias] {
			return fmt.Errorf("secrets: alias %s: the models file has no model_name %q; fix the name or remove the line", alias, alias)
		}
	}
	return nil
}

// actionFor decides a deployment's action: the Caddyfile's alias line,
// then the entry's own, then the Caddyfile's action, then the default.
func (s *Secrets) actionFor(alias string, d *modellist.Deployment) modellist.SecretsAction {
	if s != nil {
		if a, ok := modellist.ParseSecretsAction(s.Aliases[alias]); ok {
			return a
		}
		if d.Secrets == modellist.SecretsDefault {
			if a, ok := modellist.ParseSecretsAction(s.Action); ok {
				return a
			}
		}
	}
	return d.SecretsPolicy()
}

// mcpAction decides an MCP server's action on tool-call arguments: the
// server's own secrets: action, then the Caddyfile's action, then redact
// (an MCP server is usually someone else's service, and a local one
// often forwards what it is given to one).
func (s *Secrets) mcpAction(srv *modellist.MCPServer) secretscan.Action {
	if srv.Secrets != modellist.SecretsDefault {
		return secretscan.Action(srv.Secrets)
	}
	if s != nil {
		if a, ok := modellist.ParseSecretsAction(s.Action); ok {
			return secretscan.Action(a)
		}
	}
	return secretscan.Redact
}

// secretFirewall is the process's firewall: its rules compiled once and
// its placeholder numbering kept across config reloads, in the usage pool
// beside the deployment states.
func secretFirewall() (*secretscan.Firewall, error) {
	v, _, err := states.LoadOrNew("secret-firewall", func() (caddy.Destructor, error) {
		fw, err := secretscan.New(secretscan.DefaultSessions, secretscan.DefaultSecretsPerScope)
		return pooledFirewall{fw}, err
	})
	if err != nil {
		return nil, err
	}
	return v.(pooledFirewall).Firewall, nil
}

type pooledFirewall struct{ *secretscan.Firewall }

func (pooledFirewall) Destruct() error { return nil }

// secretsSeen reports one detection: a metric, a log line, a ledger
// record and, for a block, an audit entry. None carries the value.
type secretsSeen struct {
	app      *App
	logger   *zap.Logger
	detected *prometheus.CounterVec
}

func (s *secretsSeen) event(e secretscan.Event) {
	s.detected.WithLabelValues(e.Rule, string(e.Action), e.Direction, e.Alias).Inc()
	level := zap.InfoLevel
	if e.Action == secretscan.Block {
		level = zap.WarnLevel
	}
	if c := s.logger.Check(level, "secret detected"); c != nil {
		c.Write(zap.String("rule", e.Rule), zap.String("action", string(e.Action)), zap.String("direction", e.Direction),
			zap.String("alias", e.Alias), zap.String("key", e.KeyID), zap.String("person", e.Person),
			zap.String("session", e.SessionID), zap.String("where", e.Location.String()))
	}
	rec := ledger.Record{
		Time: time.Now().UTC(), KeyID: e.KeyID, Workspace: e.Workspace, Alias: e.Alias,
		Provider: e.Rule, UpstreamModel: e.Person, ServiceTier: string(e.Action), Agent: e.Direction,
		Endpoint: ledger.EndpointSecret, Status: 200, Outcome: ledger.OutcomeOK, SessionID: e.SessionID,
	}
	if e.Action == secretscan.Block {
		rec.Status, rec.Outcome = 400, ledger.OutcomeRefused
	}
	if !s.app.Enqueue(rec) {
		s.logger.Error("ledger queue full; a secret detection went unrecorded", zap.String("rule", e.Rule), zap.String("key", e.KeyID))
	}
	if e.Action == secretscan.Block && e.Direction == "request" && s.app.Audit() != nil {
		actor := e.KeyID
		if e.Person != "" {
			actor = e.Person
		}
		fields := map[string]string{"rule": e.Rule, "where": e.Location.String(), "key": e.KeyID, "session": e.SessionID}
		if e.Location.Message >= 0 {
			fields["message"] = strconv.Itoa(e.Location.Message)
		}
		go s.app.Audit().Record(context.Background(), audit.Event{Time: time.Now(), Actor: actor, Action: "secret.block", Target: e.Alias, Fields: fields})
	}
}

func newSecretsMetric(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	if reg == nil {
		reg = prometheus.NewRegistry()
	}
	return register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "modelgate", Name: "secrets_detected_total",
		Help: "Secrets the firewall found, by rule, action (redact, block, log), direction (request, answer) and alias.",
	}, []string{"rule", "action", "direction", "alias"}))
}

// provisionSecrets checks the secrets block against the models file and
// takes the process's firewall.
func (g *Gateway) provisionSecrets(ctx caddy.Context, cfg *modellist.Config) (*secretsSeen, *secretscan.Firewall, error) {
	if err := g.Secrets.validate(cfg); err != nil {
		return nil, nil, err
	}
	detected, err := newSecretsMetric(ctx.GetMetricsRegistry())
	if err != nil {
		return nil, nil, err
	}
	fw, err := secretFirewall()
	if err != nil {
		return nil, nil, err
	}
	g.holdsFirewall = true
	return &secretsSeen{app: g.app, logger: g.logger, detected: detected}, fw, nil
}
