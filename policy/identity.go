// Package policy decides what a caller may do: its Identity and key
// authentication (Auth), the paths answered without a key, the runtime
// keys and workspaces kept in the ledger database (Controls), budgets,
// rate limits and budget alerts. It knows no wire format beyond the
// errors it returns; the gateway (handlers) and the admin API
// (handlers/admin) call it, and it calls neither.
package policy

import (
	"context"

	"github.com/modelgate/modelgate/ledger"
)

// Role is what a key may do.
type Role string

const (
	// RoleUser may call the gateway endpoints for its allowed aliases.
	RoleUser Role = "user"
	// RoleAdmin may also read usage and cost reports and /health.
	RoleAdmin Role = "admin"
	// RoleAuditor is a person (signed in with the identity provider) who
	// reads every report, session and key but changes nothing.
	RoleAuditor Role = "auditor"
)

// Identity is the authenticated caller, attached to the request context by
// the auth handler and read by every later handler.
type Identity struct {
	KeyID     string
	Workspace string
	Role      Role
	// Models is the alias allow-list; nil allows every alias.
	Models map[string]struct{}
	// MCP is the MCP allow-list: entries "server" or "server/tool"; nil
	// allows every server.
	MCP []string
	// Limits are the key's budgets and rates (runtime keys).
	Limits ledger.Limits
	// Runtime: the key lives in the ledger database, not the Caddyfile.
	Runtime bool
	// Person is set for a person signed in with the identity provider
	// (a dashboard session, no key): their email or subject. OwnKeys are
	// the ids of the keys minted for them, whose usage is theirs.
	Person  string
	OwnKeys []string
}

// ReadsAll reports a caller who may read every key's reports and
// sessions: an admin or an auditor.
func (id *Identity) ReadsAll() bool {
	return id != nil && (id.Role == RoleAdmin || id.Role == RoleAuditor)
}

// Allows reports whether the caller may use alias.
func (id *Identity) Allows(alias string) bool {
	if id == nil {
		return false
	}
	if id.Models == nil {
		return true
	}
	_, ok := id.Models[alias]
	return ok
}

type identityKey struct{}

// WithIdentity returns ctx carrying id.
func WithIdentity(ctx context.Context, id *Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// IdentityFrom returns the caller attached by the auth handler, or nil.
func IdentityFrom(ctx context.Context) *Identity {
	id, _ := ctx.Value(identityKey{}).(*Identity)
	return id
}
