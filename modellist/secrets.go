package modellist

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// SecretsAction is what the secret firewall does with a credential found
// in a request bound for a deployment, or in its answer.
type SecretsAction string

const (
	// SecretsDefault: the entry says nothing; Deployment.SecretsPolicy
	// applies the documented default.
	SecretsDefault SecretsAction = ""
	// SecretsRedact replaces each secret with a placeholder before the
	// upstream sees it (the default for cloud deployments).
	SecretsRedact SecretsAction = "redact"
	// SecretsBlock refuses the request with a 400 naming rule and place.
	SecretsBlock SecretsAction = "block"
	// SecretsLog sends the request as it is and records the detection
	// (the default for local deployments).
	SecretsLog SecretsAction = "log"
	// SecretsOff does not scan.
	SecretsOff SecretsAction = "off"
)

// SecretsActions lists the words the models file and the Caddyfile take.
func SecretsActions() []string { return []string{"redact", "block", "log", "off"} }

// ParseSecretsAction reads one of SecretsActions.
func ParseSecretsAction(s string) (SecretsAction, bool) {
	switch a := SecretsAction(strings.ToLower(strings.TrimSpace(s))); a {
	case SecretsRedact, SecretsBlock, SecretsLog, SecretsOff:
		return a, true
	}
	return SecretsDefault, false
}

// SecretsPolicy is the entry's action, or the default: redact for a cloud
// deployment (its traffic leaves the network), log for a local one.
func (d *Deployment) SecretsPolicy() SecretsAction {
	if d.Secrets != SecretsDefault {
		return d.Secrets
	}
	if d.Local {
		return SecretsLog
	}
	return SecretsRedact
}

// Stricter orders actions: block, then redact, log, off. An alias served
// by several deployments acts as its strictest one, since any of them
// may get the request.
func (a SecretsAction) Stricter(b SecretsAction) bool { return a.rank() > b.rank() }

func (a SecretsAction) rank() int {
	switch a {
	case SecretsBlock:
		return 4
	case SecretsRedact:
		return 3
	case SecretsLog:
		return 2
	case SecretsOff:
		return 1
	}
	return 0
}

func secretsFields() []string { return []string{"action"} }

// secrets reads an entry's secrets: {action: …}.
func (p *parser) secrets(d *Deployment, n *yaml.Node, w where) {
	if a, ok := p.secretsAction(n, w); ok {
		d.Secrets = a
	}
}

// secretsAction reads a secrets: {action: …} mapping, of a models-file
// entry or an mcp_servers entry.
func (p *parser) secretsAction(n *yaml.Node, w where) (SecretsAction, bool) {
	fs, ok := p.mapping(n, w, secretsFields(), "action: redact|block|log|off")
	if !ok {
		return SecretsDefault, false
	}
	f, ok := fs["action"]
	if !ok {
		p.errorf(n, w.sub("action"), "required; add action: redact, block, log or off")
		return SecretsDefault, false
	}
	s, ok := p.scalar(f.val, w.sub("action"))
	if !ok {
		return SecretsDefault, false
	}
	a, ok := ParseSecretsAction(s)
	if !ok {
		p.errorf(f.val, w.sub("action"), "unknown action %q; use redact, block, log or off", s)
		return SecretsDefault, false
	}
	return a, true
}
