// Package identity is people and their sign-in: an OpenID Connect relying
// party (authorization code with PKCE, discovery from the issuer) for the
// dashboard's cookie sessions, the device flow and refresh that mint
// short-lived per-person keys for `caddy modelgate login`, and the group
// rules that decide a person's workspace, role, models and budget. It
// stands on policy (the caller's Identity, the runtime key registry) and
// ledger (key records); caddymodule wires it into llm_auth.
package identity

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// Config is the `llm_auth { oidc { … } }` block and the group rules.
type Config struct {
	// Issuer is the provider's issuer URL; discovery reads
	// <issuer>/.well-known/openid-configuration.
	Issuer       string
	ClientID     string
	ClientSecret string // never logged or echoed
	// GroupsClaim names the claim listing the person's groups (default
	// "groups").
	GroupsClaim string
	// Scopes asked for (default openid, email, profile).
	Scopes []string
	// SessionTTL caps a dashboard session; it also ends when the ID
	// token expires (default 8 h).
	SessionTTL time.Duration
	// KeyTTL is a per-person key's lifetime (default 12 h).
	KeyTTL time.Duration
	// Name is the provider's name on the dashboard's button (default the
	// issuer's host).
	Name string
	// RedirectURL fixes the callback URL; default <site>/auth/oidc/callback
	// from the request's host.
	RedirectURL string
	Groups      Groups
}

// Role is what a group grants: admin, auditor or member.
type Role string

// The roles a group grants.
const (
	RoleAdmin   Role = "admin"
	RoleAuditor Role = "auditor"
	RoleMember  Role = "member"
)

func (r Role) rank() int {
	switch r {
	case RoleAdmin:
		return 3
	case RoleAuditor:
		return 2
	case RoleMember:
		return 1
	}
	return 0
}

// Policy is the role as the admin API checks it.
func (r Role) Policy() policy.Role {
	switch r {
	case RoleAdmin:
		return policy.RoleAdmin
	case RoleAuditor:
		return policy.RoleAuditor
	}
	return policy.RoleUser
}

// ParseRole reads a group's role.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleAdmin, RoleAuditor, RoleMember:
		return r, nil
	}
	return "", fmt.Errorf("role %q is not admin, auditor or member", s)
}

// Group is one `group <idp group> { … }` rule.
type Group struct {
	Name      string // the group's name as the provider sends it
	Workspace string
	Role      Role // default member
	Models    []string
	Limits    ledger.Limits // budget and rates for the person's keys
	// Downgrade: past the budget, requests go to this alias (at_cap
	// downgrade); "" refuses them.
	Downgrade string
	// DowngradeBound lets Downgrade be a priced alias.
	DowngradeBound ledger.DowngradeBound
}

// Groups are the rules in configuration order.
type Groups []Group

// Grant is what a person's groups give them.
type Grant struct {
	// OK is false when the rules name none of the person's groups.
	OK        bool
	Role      Role
	Workspace string
	// Models is the union of the matched groups' lists; nil allows every
	// alias (some matched group lists none).
	Models []string
	Limits ledger.Limits
	// Downgrade is the at_cap alias of the group whose limits these are,
	// DowngradeBound its bound, LimitsFrom its name.
	Downgrade      string
	DowngradeBound ledger.DowngradeBound
	LimitsFrom     string
	// Matched are the configured groups the person is in, in rule order.
	Matched []string
}

// Resolve decides what a person in groups may do: the highest role of
// the groups they are in, the first workspace and the first limits named
// in rule order (with the first breaker named, when those limits' group
// has none), and the union of their models. Without any rule every
// signed-in person is a member; with rules, a person in none of them is
// refused.
func (gs Groups) Resolve(groups []string) Grant {
	if len(gs) == 0 {
		return Grant{OK: true, Role: RoleMember}
	}
	var g Grant
	allModels := false
	limitsSet := false
	var approval []string
	toolSearch := false
	// A breaker needs no money limit beside it: the first group's that
	// sets one, unless the group whose limits apply has its own.
	var brk *ledger.BreakerRules
	for _, rule := range gs {
		if !slices.Contains(groups, rule.Name) {
			continue
		}
		g.OK = true
		g.Matched = append(g.Matched, rule.Name)
		role := rule.Role
		if role == "" {
			role = RoleMember
		}
		if role.rank() > g.Role.rank() {
			g.Role = role
		}
		if g.Workspace == "" {
			g.Workspace = rule.Workspace
		}
		if len(rule.Models) == 0 {
			allModels = true
		}
		for _, m := range rule.Models {
			if !slices.Contains(g.Models, m) {
				g.Models = append(g.Models, m)
			}
		}
		if !limitsSet && hasLimits(rule.Limits) {
			lm := rule.Limits
			lm.Models = nil
			g.Limits, g.Downgrade, g.DowngradeBound, g.LimitsFrom, limitsSet = lm, rule.Downgrade, rule.DowngradeBound, rule.Name, true
		}
		// MCP approvals only ever add: every matched group's count.
		for _, e := range rule.Limits.MCPApproval {
			if !slices.Contains(approval, e) {
				approval = append(approval, e)
			}
		}
		toolSearch = toolSearch || rule.Limits.MCPToolSearch
		if brk == nil {
			brk = rule.Limits.Breaker
		}
	}
	if g.Limits.Breaker == nil {
		g.Limits.Breaker = brk
	}
	if allModels {
		g.Models = nil
	}
	g.Limits.Models = g.Models
	g.Limits.MCPApproval, g.Limits.MCPToolSearch = approval, toolSearch
	return g
}

// Split takes the group's budget out of the limits a person's key or
// session carries: it is the person's default limit, counted over every
// key of theirs (spendlimit.Set.Person), not a budget of each key.
func (g Grant) Split() (ledger.Limits, *ledger.PersonBudget) {
	l := g.Limits
	if l.BudgetCents == nil {
		return l, nil
	}
	period := l.BudgetPeriod
	if period == "" {
		period = "total"
	}
	b := &ledger.PersonBudget{Cents: *l.BudgetCents, Period: period, SoftCents: l.SoftBudgetCents, Downgrade: g.Downgrade, Group: g.LimitsFrom}
	if g.DowngradeBound != (ledger.DowngradeBound{}) {
		bound := g.DowngradeBound
		b.Bound = &bound
	}
	l.BudgetCents, l.BudgetPeriod, l.SoftBudgetCents = nil, "", 0
	return l, b
}

func hasLimits(l ledger.Limits) bool {
	return l.BudgetCents != nil || l.SoftBudgetCents != 0 || l.SessionBudgetCents != nil || l.RPM != 0 || l.TPM != 0 || l.MaxParallel != 0
}

// Person is who signed in.
type Person struct {
	Subject string `json:"sub"`
	// Issuer is the identity provider's issuer that named Subject; empty
	// in a session or hand-off sealed before it was recorded.
	Issuer string   `json:"iss,omitempty"`
	Email  string   `json:"email,omitempty"`
	Groups []string `json:"groups"`
}

// StableID is the person as the identity provider names them for good,
// "<issuer> <subject>" (policy.Identity's Subject); "" when the issuer is
// not known.
func (p Person) StableID() string {
	if p.Issuer == "" || p.Subject == "" {
		return ""
	}
	return p.Issuer + " " + p.Subject
}

// ID is how logs, keys and reports name the person: their email, else
// their subject.
func (p Person) ID() string {
	if p.Email != "" {
		return p.Email
	}
	return p.Subject
}

// AuditEvent is one sign-in, sign-out or key minted, for the audit log.
type AuditEvent struct {
	Time   time.Time
	Actor  string // the person's id
	Action string // e.g. oidc.signin, oidc.signout, oidc.key_minted, oidc.signin_failed
	Target string // e.g. the minted key's id
	Source string // the client's address
	// Fields are what changed or matters (never a secret).
	Fields map[string]string
}

// Auditor receives audit events; the integrator's audit log implements it.
type Auditor interface {
	Record(ctx context.Context, e AuditEvent)
}

// AuditFunc adapts a function to Auditor.
type AuditFunc func(ctx context.Context, e AuditEvent)

// Record calls f.
func (f AuditFunc) Record(ctx context.Context, e AuditEvent) { f(ctx, e) }
