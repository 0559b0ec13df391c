package policy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Controls holds the runtime keys and workspaces kept in the ledger
// database. Authentication reads an in-memory snapshot (no database round
// trip per request); Refresh, polled every second by the app, reloads it
// when the database's control version moved, so a change made through any
// instance reaches every instance within about a second. The Caddyfile's
// keys and workspaces are registered too, so the admin API lists them.
type Controls struct {
	store ledger.ControlStore // nil until the ledger is open
	now   func() time.Time

	mu     sync.Mutex // serializes refreshes and writes
	snap   atomic.Pointer[controlSnapshot]
	static atomic.Pointer[staticControls]
	// opened is closed when the store is attached: admin calls made while
	// the ledger is still opening wait on it.
	opened     chan struct{}
	openedOnce sync.Once
	// OpenWait is how long an admin call waits for the store to be
	// attached: right after a start the ledger may still be opening, and a
	// script creating keys as soon as the gateway is up should wait, not
	// fail. NewControls sets 10 s.
	OpenWait time.Duration
}

// staticControls are the Caddyfile's keys, by site (a key id is a label
// unique only within its site's llm_auth), and every site's workspaces.
type staticControls struct {
	keys       map[string][]*Identity // by site
	workspaces []string
	limits     map[string]ledger.Limits // by workspace name
	declared   map[string]string        // the site that set a workspace's limits
}

type controlSnapshot struct {
	version    int64
	byHash     map[[sha256.Size]byte]*runtimeKey
	keys       []ledger.ControlKey
	workspaces []ledger.ControlWorkspace
	// archived are the ids of archived workspaces, whose keys are refused.
	archived map[string]bool
	// signedOut are the digests of dashboard sessions signed out on any
	// instance (ledger.SessionDigest), until they would have expired.
	signedOut map[string]struct{}
	// replaced is closed when a newer snapshot takes this one's place:
	// what was admitted on this one (an open connection) looks again.
	replaced chan struct{}
}

// runtimeKey is a runtime key as authentication sees it.
type runtimeKey struct {
	id      *Identity
	status  string
	expires time.Time
}

// NewControls returns an empty registry; now may be nil.
func NewControls(now func() time.Time) *Controls {
	if now == nil {
		now = time.Now
	}
	c := &Controls{now: now, opened: make(chan struct{}), OpenWait: 10 * time.Second}
	c.snap.Store(&controlSnapshot{version: -1, replaced: make(chan struct{})})
	c.static.Store(&staticControls{})
	return c
}

// SetStore attaches the ledger's store once it is open.
func (c *Controls) SetStore(s ledger.ControlStore) {
	c.mu.Lock()
	c.store = s
	c.mu.Unlock()
	if s != nil {
		c.openedOnce.Do(func() { close(c.opened) })
	}
}

// WaitStore is the store, waiting for it to be attached up to OpenWait or
// until ctx ends; nil when neither saw it attached.
func (c *Controls) WaitStore(ctx context.Context) ledger.ControlStore {
	ctx, cancel := context.WithTimeout(ctx, c.OpenWait)
	defer cancel()
	select {
	case <-c.opened:
	case <-ctx.Done():
	}
	return c.Store()
}

// Store is the attached store, or nil.
func (c *Controls) Store() ledger.ControlStore {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.store
}

// RegisterStatic records one site's Caddyfile keys and workspaces, beside
// the other sites' (each llm_auth registers its own): the admin API and the
// batch worker of a site see that site's keys. Workspaces are one namespace
// for every site, as runtime ones are: two sites giving one workspace
// different limits is an error naming both.
func (c *Controls) RegisterStatic(site string, keys []*Identity, workspaces []string, limits map[string]ledger.Limits) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.static.Load()
	n := &staticControls{keys: maps.Clone(old.keys), workspaces: slices.Clone(old.workspaces),
		limits: maps.Clone(old.limits), declared: maps.Clone(old.declared)}
	if n.keys == nil {
		n.keys, n.limits, n.declared = map[string][]*Identity{}, map[string]ledger.Limits{}, map[string]string{}
	}
	n.keys[site] = append(slices.Clone(n.keys[site]), keys...)
	for _, ws := range workspaces {
		l, had := n.limits[ws]
		switch by, set := n.declared[ws]; {
		case !had:
			n.workspaces = append(n.workspaces, ws)
		case set && by != site && !limitsEqual(l, limits[ws]) && !limitsEqual(limits[ws], ledger.Limits{}):
			return fmt.Errorf("workspace %s: site %s gives it other limits than site %s; workspaces are shared by every site, so declare its limits on one site only or make them the same", ws, siteName(site), siteName(by))
		case set:
			continue
		}
		n.limits[ws] = limits[ws]
		if !limitsEqual(limits[ws], ledger.Limits{}) {
			n.declared[ws] = site
		}
	}
	c.static.Store(n)
	return nil
}

// StaticElsewhere is the other sites whose Caddyfile keys include keyID.
func (c *Controls) StaticElsewhere(site, keyID string) []string {
	var out []string
	for s, keys := range c.static.Load().keys {
		if s != site && slices.ContainsFunc(keys, func(id *Identity) bool { return id.KeyID == keyID }) {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// siteName is a site as a config error shows it.
func siteName(site string) string {
	if site == "" {
		return "(unnamed)"
	}
	return strconv.Quote(site)
}

func limitsEqual(a, b ledger.Limits) bool { return reflect.DeepEqual(a, b) }

// Now is the registry's clock.
func (c *Controls) Now() time.Time { return c.now() }

// Static is what RegisterStatic recorded: site's Caddyfile keys, every
// site's workspaces, and their limits by workspace name. The caller must
// not change them.
func (c *Controls) Static(site string) (keys []*Identity, workspaces []string, limits map[string]ledger.Limits) {
	s := c.static.Load()
	return s.keys[site], s.workspaces, s.limits
}

// Runtime is the runtime keys and workspaces (archived ones included) of
// the snapshot this instance serves on. The caller must not change them.
func (c *Controls) Runtime() ([]ledger.ControlKey, []ledger.ControlWorkspace) {
	s := c.snap.Load()
	return s.keys, s.workspaces
}

// RuntimeName is the name of the runtime key or workspace id in the
// snapshot this instance serves on, or "" when it has none.
func (c *Controls) RuntimeName(id string) string {
	s := c.snap.Load()
	for _, k := range s.keys {
		if k.ID == id {
			return k.Name
		}
	}
	for _, w := range s.workspaces {
		if w.ID == id {
			return w.Name
		}
	}
	return ""
}

// errNoStore is a write before the ledger is open.
var errNoStore = errors.New("the key store is not open")

// write runs op, a change to the keys keyIDs and workspaces wsIDs, on
// the store under the registry's lock and, if it succeeded, brings the
// snapshot up to it, so this instance sees the change at once; the other
// instances see it at their next Poll.
func (c *Controls) write(ctx context.Context, keyIDs, wsIDs []string, op func(ledger.ControlStore) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.store == nil {
		return errNoStore
	}
	if err := op(c.store); err != nil {
		return err
	}
	// Committed: a client gone now must not leave this instance without
	// its own change until the next poll.
	_ = c.applyLocked(context.WithoutCancel(ctx), keyIDs, wsIDs)
	return nil
}

// applyLocked brings the snapshot up to this instance's own change of the
// keys keyIDs and workspaces wsIDs (any id the store accepts, the empty
// one included: a nil list, not "", is none). Every change moves the
// version by one, under a lock on its row, so a version one past the
// snapshot's means no other change came between: then only the changed
// rows are read back and merged,
// and creating the n-th key costs one row, not n (a thousand keys made one
// after another read 500,500 rows when every change reloaded the table).
// Anything else reloads everything.
func (c *Controls) applyLocked(ctx context.Context, keyIDs, wsIDs []string) error {
	old := c.snap.Load()
	if old.version < 0 {
		return c.refreshLocked(ctx, true)
	}
	ch, err := c.store.ReadControls(ctx, keyIDs, wsIDs)
	if err != nil {
		return err
	}
	if ch.Version != old.version+1 || len(ch.Keys) != len(keyIDs) || len(ch.Workspaces) != len(wsIDs) {
		return c.refreshLocked(ctx, true)
	}
	c.replace(old.with(ch))
	return nil
}

// PutKey stores a new runtime key.
func (c *Controls) PutKey(ctx context.Context, k ledger.ControlKey) error {
	return c.write(ctx, []string{k.ID}, nil, func(s ledger.ControlStore) error { return s.PutKey(ctx, k) })
}

// UpdateKey changes the stored key id under its row lock, in what change
// sets, so a concurrent change to other fields is never written back
// over; an error from change is returned as it is.
func (c *Controls) UpdateKey(ctx context.Context, id string, change func(*ledger.ControlKey) error) (k ledger.ControlKey, err error) {
	err = c.write(ctx, []string{id}, nil, func(s ledger.ControlStore) error {
		k, err = s.UpdateKey(ctx, id, change)
		return err
	})
	return k, err
}

// PutWorkspace stores a new runtime workspace.
func (c *Controls) PutWorkspace(ctx context.Context, ws ledger.ControlWorkspace) error {
	return c.write(ctx, nil, []string{ws.ID}, func(s ledger.ControlStore) error { return s.PutWorkspace(ctx, ws) })
}

// UpdateWorkspace changes the stored workspace id under its row lock, as
// UpdateKey does a key.
func (c *Controls) UpdateWorkspace(ctx context.Context, id string, change func(*ledger.ControlWorkspace) error) (ws ledger.ControlWorkspace, err error) {
	err = c.write(ctx, nil, []string{id}, func(s ledger.ControlStore) error {
		ws, err = s.UpdateWorkspace(ctx, id, change)
		return err
	})
	return ws, err
}

// WorkspaceLimits are a workspace's limits, a Caddyfile or runtime one.
// An archived workspace keeps its limits: its keys are refused anyway
// (archivedWorkspace), and nothing of it may run unlimited.
func (c *Controls) WorkspaceLimits(id string) ledger.Limits {
	if c == nil || id == "" {
		return ledger.Limits{}
	}
	if l, ok := c.static.Load().limits[id]; ok {
		return l
	}
	for _, ws := range c.snap.Load().workspaces {
		if ws.ID == id {
			return ws.Limits
		}
	}
	return ledger.Limits{}
}

// archivedWorkspace reports whether id is an archived runtime workspace.
func (c *Controls) archivedWorkspace(id string) bool {
	return c != nil && id != "" && c.snap.Load().archived[id]
}

// Refresh reloads the snapshot if the database's version moved.
func (c *Controls) Refresh(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.refreshLocked(ctx, false)
}

func (c *Controls) refreshLocked(ctx context.Context, force bool) error {
	if c.store == nil {
		return nil
	}
	if !force {
		v, err := c.store.ControlVersion(ctx)
		if err != nil {
			return err
		}
		if v == c.snap.Load().version {
			return nil
		}
	}
	all, err := c.store.LoadControls(ctx)
	if err != nil {
		return err
	}
	s := &controlSnapshot{version: all.Version, keys: all.Keys, workspaces: all.Workspaces,
		byHash: make(map[[sha256.Size]byte]*runtimeKey, len(all.Keys)), archived: map[string]bool{}, replaced: make(chan struct{}), signedOut: digestSet(all.SignedOut)}
	for _, ws := range all.Workspaces {
		if !ws.ArchivedAt.IsZero() {
			s.archived[ws.ID] = true
		}
	}
	for _, k := range all.Keys {
		if h, ok := secretDigest(k.SecretHash); ok {
			s.byHash[h] = newRuntimeKey(k)
		}
	}
	c.replace(s)
	return nil
}

// replace makes s the snapshot served on and tells whoever watched the
// old one. The caller holds c.mu, so snapshots are replaced one at a time.
func (c *Controls) replace(s *controlSnapshot) {
	close(c.snap.Swap(s).replaced)
}

// Changed is closed when the runtime keys or workspaces in force change
// (on this instance's own write, or at the poll that sees another's), so a
// connection admitted once can look at its key again without a database
// query of its own.
func (c *Controls) Changed() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.snap.Load().replaced
}

// with is the snapshot after ch, the rows of one change read back at the
// version that change made: each replaces the key or workspace of its id
// or is added, in the order a full load gives (created, then id).
func (s *controlSnapshot) with(ch ledger.Controls) *controlSnapshot {
	n := &controlSnapshot{version: ch.Version, keys: slices.Clone(s.keys), workspaces: slices.Clone(s.workspaces),
		byHash: maps.Clone(s.byHash), archived: maps.Clone(s.archived), replaced: make(chan struct{}), signedOut: digestSet(ch.SignedOut)}
	// Every replaced key's old secret goes before any new one is added:
	// a secret one changed key gave up may be another's now.
	for _, k := range ch.Keys {
		i := slices.IndexFunc(n.keys, func(o ledger.ControlKey) bool { return o.ID == k.ID })
		if i < 0 {
			n.keys = append(n.keys, k)
			continue
		}
		if h, ok := secretDigest(n.keys[i].SecretHash); ok {
			delete(n.byHash, h)
		}
		n.keys[i] = k
	}
	for _, k := range ch.Keys {
		if h, ok := secretDigest(k.SecretHash); ok {
			n.byHash[h] = newRuntimeKey(k)
		}
	}
	for _, w := range ch.Workspaces {
		if i := slices.IndexFunc(n.workspaces, func(o ledger.ControlWorkspace) bool { return o.ID == w.ID }); i < 0 {
			n.workspaces = append(n.workspaces, w)
		} else {
			n.workspaces[i] = w
		}
		if w.ArchivedAt.IsZero() {
			delete(n.archived, w.ID)
		} else {
			n.archived[w.ID] = true
		}
	}
	(&ledger.Controls{Keys: n.keys, Workspaces: n.workspaces}).Sort()
	return n
}

func digestSet(digests []string) map[string]struct{} {
	set := make(map[string]struct{}, len(digests))
	for _, d := range digests {
		set[d] = struct{}{}
	}
	return set
}

// SignOut ends the dashboard session sessionID on every instance until
// expires: stored in the ledger, it moves the control version, so this
// instance's snapshot has it at once and every other's at its next poll.
func (c *Controls) SignOut(ctx context.Context, sessionID string, expires time.Time) error {
	return c.write(ctx, nil, nil, func(s ledger.ControlStore) error { return s.SignOut(ctx, sessionID, expires) })
}

// SignedOut reports whether the session sessionID was signed out; loaded
// is false until the snapshot was first read from the ledger, when no
// sign-out can be known.
func (c *Controls) SignedOut(sessionID string) (out, loaded bool) {
	s := c.snap.Load()
	if s.version < 0 {
		return false, false
	}
	_, out = s.signedOut[ledger.SessionDigest(sessionID)]
	return out, true
}

// secretDigest decodes a stored secret hash; a malformed one matches no
// key.
func secretDigest(hexHash string) (h [sha256.Size]byte, ok bool) {
	// Lower case only: the minter writes it so, and a stored hash in
	// another case is not one the gateway wrote.
	if len(hexHash) != 2*sha256.Size || strings.ToLower(hexHash) != hexHash {
		return h, false
	}
	var src [2 * sha256.Size]byte // []byte(hexHash) would allocate once per key per snapshot
	copy(src[:], hexHash)
	_, err := hex.Decode(h[:], src[:])
	return h, err == nil
}

// newRuntimeKey is key k as authentication sees it.
func newRuntimeKey(k ledger.ControlKey) *runtimeKey {
	id := &Identity{KeyID: k.ID, Workspace: k.WorkspaceID, Role: RoleUser, Limits: k.Limits, Runtime: true, MCP: k.Limits.MCP,
		Expires: k.ExpiresAt}
	if c := k.CreatedBy; c != nil && c.Type == "oidc" {
		id.Owner, id.Groups, id.PersonBudget = c.ID, c.Groups, c.Budget
		if c.Issuer != "" && c.Subject != "" {
			id.Subject = c.Issuer + " " + c.Subject
		}
		if r := Role(c.Role); r == RoleAdmin || r == RoleAuditor {
			id.OwnerRole = r
		}
	}
	if len(k.Limits.Models) > 0 {
		id.Models = make(map[string]struct{}, len(k.Limits.Models))
		for _, m := range k.Limits.Models {
			id.Models[m] = struct{}{}
		}
	}
	return &runtimeKey{id: id, status: k.Status, expires: k.ExpiresAt}
}

// lookup finds a runtime key by the digest of its secret.
func (c *Controls) lookup(d [sha256.Size]byte) *runtimeKey {
	if c == nil {
		return nil
	}
	return c.snap.Load().byHash[d]
}

// Poll refreshes every interval until ctx ends, reporting failures.
func (c *Controls) Poll(ctx context.Context, interval time.Duration, failed func(error)) {
	poll(ctx, interval, c.Refresh, failed)
}
