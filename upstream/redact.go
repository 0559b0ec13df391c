package upstream

import (
	"net/url"
	"strings"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/providers"
)

// minSecretLen keeps short values ("none", "1") out of the redaction
// list: replacing them would garble ordinary text and hide nothing.
const minSecretLen = 8

// secretsOf lists what a deployment sends upstream that a client must
// never read back: its key, extra_headers values and credentials in
// api_base. Upstreams echo such values in error text ("invalid api key
// sk-…"); every upstream text bound for a client passes through
// Deployment.Redact, which removes them.
func secretsOf(d *modellist.Deployment) []string {
	var out []string
	add := func(s string) {
		if len(s) >= minSecretLen {
			out = append(out, s)
		}
	}
	add(d.APIKey)
	for _, v := range d.ExtraHeaders {
		add(v)
		if rest, ok := strings.CutPrefix(v, "Bearer "); ok {
			add(rest)
		}
	}
	if u, err := url.Parse(d.APIBase); err == nil {
		if u.User != nil {
			add(u.User.Username())
			if p, ok := u.User.Password(); ok {
				add(p)
			}
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				add(v)
			}
		}
	}
	return out
}

// Redact is the one gate for upstream text on its way to a client
// (error bodies, in-band stream errors, token-count failures): every
// secret of the deployment is replaced. The error is copied only when it
// held one.
func (b *Deployment) Redact(e *providers.APIError) *providers.APIError {
	if e == nil || !b.leaks(e.Message, e.Param, e.Code, string(e.Raw)) {
		return e
	}
	c := *e
	c.Message, c.Param, c.Code = b.scrub(c.Message), b.scrub(c.Param), b.scrub(c.Code)
	// A raw body carrying a secret is re-rendered from the scrubbed parts.
	c.Raw = nil
	return &c
}

func (b *Deployment) leaks(texts ...string) bool {
	for _, s := range b.allSecrets() {
		for _, t := range texts {
			if strings.Contains(t, s) {
				return true
			}
		}
	}
	return false
}

func (b *Deployment) scrub(t string) string {
	for _, s := range b.allSecrets() {
		t = strings.ReplaceAll(t, s, "[redacted]")
	}
	return t
}

// allSecrets adds a cloud deployment's to the fixed list: its key pair or
// private key, and the access token of the moment, which changes.
func (b *Deployment) allSecrets() []string {
	if b.holder == nil {
		return b.secrets
	}
	more := b.holder.secrets()
	if len(more) == 0 {
		return b.secrets
	}
	out := b.secrets[:len(b.secrets):len(b.secrets)]
	for _, s := range more {
		if len(s) >= minSecretLen {
			out = append(out, s)
		}
	}
	return out
}
