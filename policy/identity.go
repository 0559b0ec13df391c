// Package handlers holds Modelgate's plain net/http handlers: key
// authentication and the chat gateway, with the caller's Identity and the
// runtime-key registry (Controls) that the admin API (handlers/admin) also
// uses. Caddy modules wrap them.
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
)

// Identity is the authenticated caller, attached to the request context by
// the auth handler and read by every later handler.
type Identity struct {
	KeyID     string
	Workspace string
	Role      Role
	// Models is the alias allow-list; nil allows every alias.
	Models map[string]struct{}
	// Limits are the key's budgets and rates (runtime keys).
	Limits ledger.Limits
	// Runtime: the key lives in the ledger database, not the Caddyfile.
	Runtime bool
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
