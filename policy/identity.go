// Package policy decides what a caller may do: its Identity and key
// authentication (Auth), the paths answered without a key, the runtime
// keys and workspaces kept in the ledger database (Controls), budgets,
// rate limits and budget alerts. It knows no wire format beyond the
// errors it returns; the gateway (handlers) and the admin API
// (handlers/admin) call it, and it calls neither.
package policy

import (
	"context"
	"time"

	"github.com/modelgate/modelgate/apierror"
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
	// Expires is when a runtime key stops being valid; zero: never.
	Expires time.Time
	// Owner is the person a key was minted for (sign-in, device flow):
	// their spend limits apply to it, and its spend is theirs. Groups are
	// their groups the gateway's rules matched, PersonBudget their group
	// rule's per-person budget. Groups has one per line
	// (ledger.GroupLines), as a usage record carries them.
	Owner        string
	Groups       string
	PersonBudget *ledger.PersonBudget
	// Subject is the identity provider's stable name of PersonID, its
	// issuer and subject ("<issuer> <subject>"), when known: an email
	// may pass to someone else, a subject never does. Empty for a key of
	// no one and for a key minted before it was recorded.
	Subject string
	// OwnerRole is the role Owner's groups gave them when the key was
	// minted (or SCIM last moved it). The key acts as a user whatever it
	// is; a decision a person's role forbids (an auditor approving an MCP
	// call) is refused by it.
	OwnerRole Role
}

// PersonID is the person the caller is: who signed in, else whom the key
// was minted for; "" for a key of no one.
func (id *Identity) PersonID() string {
	if id.Person != "" {
		return id.Person
	}
	return id.Owner
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

// Resolver authenticates a presented key against the keys in force now.
// A request that outlives its admission (each turn on a WebSocket) asks it
// again, so the key's status, expiry, workspace, models and limits are
// those of the current snapshot, not of the moment the connection opened.
type Resolver interface {
	// Identify is the caller whose key secret is, or the refusal an HTTP
	// request presenting it would get now.
	Identify(secret string) (*Identity, *apierror.Error)
	// Changed is closed when the keys or workspaces in force may have
	// changed; nil when they never change.
	Changed() <-chan struct{}
}

type resolverKey struct{}

// WithResolver returns ctx carrying the resolver that admitted the
// request, for what is served on it later.
func WithResolver(ctx context.Context, r Resolver) context.Context {
	return context.WithValue(ctx, resolverKey{}, r)
}

// ResolverFrom returns the resolver attached by the auth handler, or nil.
func ResolverFrom(ctx context.Context) Resolver {
	r, _ := ctx.Value(resolverKey{}).(Resolver)
	return r
}
