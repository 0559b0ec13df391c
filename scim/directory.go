package scim

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// directoryTTL is how old the sign-in's view of the directory may be. It
// matches the 2 s within which a deactivation reaches every instance's
// keys, so a deactivated person is refused at sign-in no later.
const directoryTTL = 2 * time.Second

// directoryCache is the provisioned people indexed for sign-in. Every
// cookie-authenticated dashboard call asks about its person, so the
// users and groups are read and decoded at most once per directoryTTL,
// not per call.
type directoryCache struct {
	mu     sync.Mutex
	built  time.Time
	byName map[string]*directoryEntry // lower-cased userName
	bySub  map[string]*directoryEntry // externalId
}

type directoryEntry struct {
	active  bool
	deleted bool     // a tombstone: the IdP deleted the person
	groups  []string // nil: the IdP pushes no groups, keep the token's
}

// Entry is what the directory says of a person at sign-in.
type Entry struct {
	Active bool
	// Deleted: the IdP deleted the person (Active is false too).
	Deleted bool
	// Groups are the pushed groups' display names; nil when the IdP
	// pushes none, so the ID token's groups stand.
	Groups []string
}

// Lookup finds the provisioned user whose userName matches email or whose
// externalId matches subject, and the display names of the groups that
// list them as a member. Sign-in consults it, so a person the IdP has
// deactivated or deleted cannot sign in again and mint a fresh key after
// SCIM revoked the old ones: a deleted person is found as a tombstone
// (Deleted, not Active) until the IdP provisions them again. found is
// false when SCIM has not provisioned the person (or the store is not
// open): sign-in then trusts the ID token.
func (h *Handler) Lookup(ctx context.Context, email, subject string) (e Entry, found bool) {
	c := &h.dir
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := h.now(); c.byName == nil || now.Sub(c.built) >= directoryTTL {
		if !h.rebuildDirectory(ctx, c) {
			return Entry{}, false
		}
		c.built = now
	}
	var d, sub *directoryEntry
	if email != "" {
		d = c.byName[strings.ToLower(email)]
	}
	if subject != "" {
		sub = c.bySub[subject]
	}
	// The subject is the IdP's fixed id for the person, the email a claim
	// that may change (or be set by the person): a subject the directory
	// deleted or deactivated is refused even when the email names another,
	// live, user.
	if d == nil || (sub != nil && !sub.active) {
		d = sub
	}
	if d == nil {
		return Entry{}, false
	}
	return Entry{Active: d.active, Deleted: d.deleted, Groups: d.groups}, true
}

// rebuildDirectory reads every user and group once; false when the store
// cannot be read (the old view, if any, is dropped).
func (h *Handler) rebuildDirectory(ctx context.Context, c *directoryCache) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c.byName, c.bySub = nil, nil
	store, ok := h.Source.WaitStore(ctx).(ledger.SCIMStore)
	if !ok {
		return false
	}
	users, err := store.SCIMUsers(ctx)
	if err != nil {
		return false
	}
	tombs, err := store.SCIMTombstones(ctx)
	if err != nil {
		return false
	}
	byID := make(map[string]*directoryEntry, len(users))
	byName := make(map[string]*directoryEntry, len(users)+len(tombs))
	bySub := make(map[string]*directoryEntry, len(users)+len(tombs))
	// Tombstones first: a live user of the same name or subject wins.
	for _, ts := range tombs {
		e := &directoryEntry{deleted: true}
		if ts.UserName != "" {
			byName[ts.UserName] = e
		}
		if ts.ExternalID != "" {
			bySub[ts.ExternalID] = e
		}
	}
	for _, row := range users {
		u, err := decodeUser(row.Doc)
		if err != nil {
			continue
		}
		e := &directoryEntry{active: u.Active}
		byID[u.ID] = e
		if u.UserName != "" {
			byName[strings.ToLower(u.UserName)] = e
		}
		if u.ExternalID != "" {
			bySub[u.ExternalID] = e
		}
	}
	// Groups unknown, or the IdP pushes none: every entry keeps nil groups
	// (the provider's groups from the ID token stand).
	if all, err := store.SCIMGroups(ctx); err == nil && len(all) > 0 {
		for _, e := range byID {
			e.groups = []string{}
		}
		for _, row := range all {
			var g Group
			if json.Unmarshal(row.Doc, &g) != nil {
				continue
			}
			for _, m := range g.Members {
				if e := byID[m.Value]; e != nil {
					e.groups = append(e.groups, g.DisplayName)
				}
			}
		}
	}
	c.byName, c.bySub = byName, bySub
	return true
}
