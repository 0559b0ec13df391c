package scim

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// KeyStore is what ControlKeys needs of the runtime keys registry
// (policy.Controls): every write goes through the ledger and bumps the
// version each instance polls every second, so a revoke is in force on
// every instance within 2 s.
type KeyStore interface {
	Refresh(ctx context.Context) error
	Runtime() ([]ledger.ControlKey, []ledger.ControlWorkspace)
	UpdateKey(ctx context.Context, id string, change func(*ledger.ControlKey) error) (ledger.ControlKey, error)
}

// Grant is what a person's groups give their keys.
type Grant struct {
	OK        bool // false: no rule names any of their groups
	Workspace string
	Limits    ledger.Limits
	// Groups (one per line) and Budget are the person's matched groups
	// and their per-person budget, which their keys carry.
	Groups string
	Budget *ledger.PersonBudget
	Role   string // what the groups make them: admin, auditor, member
}

// ControlKeys implements Keys over the runtime keys: a person's keys
// are those minted for them by OIDC sign-in (created_by type "oidc" with
// their id, which is their email or subject).
type ControlKeys struct {
	Store KeyStore
	// Resolve is the identity package's group rules (Groups.Resolve):
	// nil leaves a person's keys where they are when their groups change.
	Resolve func(groups []string) Grant
}

// owns reports whether k was minted for p.
func owns(k ledger.ControlKey, p Person) bool {
	if k.CreatedBy == nil || k.CreatedBy.Type != "oidc" {
		return false
	}
	for _, id := range []string{k.CreatedBy.ID, k.CreatedBy.Email, k.CreatedBy.Subject} {
		if id == "" {
			continue
		}
		if (p.UserName != "" && equalFoldEmail(id, p.UserName)) || (p.ExternalID != "" && id == p.ExternalID) {
			return true
		}
	}
	return false
}

// equalFoldEmail compares a key owner's id with a userName: emails match
// case-insensitively, as IdPs treat them.
func equalFoldEmail(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func (c ControlKeys) each(ctx context.Context, p Person, change func(*ledger.ControlKey) bool) (int, error) {
	if err := c.Store.Refresh(ctx); err != nil {
		return 0, err
	}
	keys, _ := c.Store.Runtime()
	n := 0
	var errs []error
	for _, k := range keys {
		if !owns(k, p) {
			continue
		}
		changed := false
		_, err := c.Store.UpdateKey(ctx, k.ID, func(k *ledger.ControlKey) error {
			if changed = change(k); changed {
				k.UpdatedAt = time.Now().UTC()
			}
			return nil
		})
		if err != nil && !errors.Is(err, ledger.ErrControlNotFound) {
			errs = append(errs, err)
			continue
		}
		if changed {
			n++
		}
	}
	return n, errors.Join(errs...)
}

// Revoke makes every active key of p inactive.
func (c ControlKeys) Revoke(ctx context.Context, p Person) (int, error) {
	return c.each(ctx, p, func(k *ledger.ControlKey) bool {
		if k.Status != "active" {
			return false
		}
		k.Status = "inactive"
		return true
	})
}

// Regrant moves p's active keys to what groups grant; with no rule
// matching any of them, the keys are revoked.
func (c ControlKeys) Regrant(ctx context.Context, p Person, groups []string) (int, error) {
	if c.Resolve == nil {
		return 0, nil
	}
	g := c.Resolve(groups)
	if !g.OK {
		return c.Revoke(ctx, p)
	}
	return c.each(ctx, p, func(k *ledger.ControlKey) bool {
		if k.Status != "active" {
			return false
		}
		k.WorkspaceID, k.Limits = g.Workspace, g.Limits
		if k.CreatedBy != nil {
			by := *k.CreatedBy
			by.Groups, by.Budget, by.Role = g.Groups, g.Budget, g.Role
			k.CreatedBy = &by
		}
		return true
	})
}

// Subjects are the identity provider's subjects of the keys minted for p
// (their created_by), so that p's upstream MCP grants, keyed by subject,
// go with p even when the directory's externalId is not the ID token's
// sub (Entra ID's pairwise subjects).
func (c ControlKeys) Subjects(ctx context.Context, p Person) ([]string, error) {
	if err := c.Store.Refresh(ctx); err != nil {
		return nil, err
	}
	keys, _ := c.Store.Runtime()
	var out []string
	for _, k := range keys {
		if owns(k, p) && k.CreatedBy.Subject != "" && !slices.Contains(out, k.CreatedBy.Subject) {
			out = append(out, k.CreatedBy.Subject)
		}
	}
	return out, nil
}

// forgetUpstreamGrants deletes u's upstream MCP grants: by their
// userName and externalId, and by the subject of each key minted for
// them (keys, when it can say).
func forgetUpstreamGrants(ctx context.Context, g ledger.MCPUpstreamTokenStore, keys Keys, u User) error {
	if _, err := g.DeleteMCPUpstreamTokensOfPerson(ctx, u.UserName, u.ExternalID); err != nil {
		return err
	}
	ks, ok := keys.(interface {
		Subjects(context.Context, Person) ([]string, error)
	})
	if !ok {
		return nil
	}
	subjects, err := ks.Subjects(ctx, u.person())
	if err != nil {
		return err
	}
	for _, s := range subjects {
		if s == u.ExternalID {
			continue
		}
		if _, err := g.DeleteMCPUpstreamTokensOfPerson(ctx, "", s); err != nil {
			return err
		}
	}
	return nil
}
