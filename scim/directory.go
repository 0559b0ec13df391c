package scim

import (
	"context"
	"encoding/json"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Lookup finds the provisioned user whose userName matches email or whose
// externalId matches subject, and the display names of the groups that
// list them as a member. Sign-in consults it, so a person the IdP has
// deactivated cannot sign in again and mint a fresh key after SCIM
// revoked the old ones. found is false when SCIM has not provisioned the
// person (or the store is not open): sign-in then trusts the ID token.
func (h *Handler) Lookup(ctx context.Context, email, subject string) (active bool, groups []string, found bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	store, ok := h.Source.WaitStore(ctx).(ledger.SCIMStore)
	if !ok {
		return false, nil, false
	}
	users, err := store.SCIMUsers(ctx)
	if err != nil {
		return false, nil, false
	}
	var user *User
	for _, row := range users {
		u, err := decodeUser(row.Doc)
		if err != nil {
			continue
		}
		if (email != "" && equalFoldEmail(u.UserName, email)) || (subject != "" && u.ExternalID == subject) {
			user = &u
			break
		}
	}
	if user == nil {
		return false, nil, false
	}
	all, err := store.SCIMGroups(ctx)
	if err != nil || len(all) == 0 {
		// Groups unknown, or the IdP pushes none: keep the provider's
		// groups from the ID token (nil means no override).
		return user.Active, nil, true
	}
	groups = []string{}
	for _, row := range all {
		var g Group
		if json.Unmarshal(row.Doc, &g) != nil {
			continue
		}
		for _, m := range g.Members {
			if m.Value == user.ID {
				groups = append(groups, g.DisplayName)
				break
			}
		}
	}
	return user.Active, groups, true
}
