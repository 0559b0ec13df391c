// Package scim is the gateway's SCIM 2.0 service provider (RFC 7643,
// RFC 7644) at /scim/v2: the Users and Groups an identity provider (Okta,
// Entra ID) provisions, kept in the ledger database so every instance
// sees one directory. Deactivating or deleting a user revokes every key
// they hold; a change of their groups moves their keys' workspace and
// limits. Both go through the Keys interface, and every change is
// recorded in the audit log.
//
// A deleted user leaves a tombstone (their userName and externalId), so
// sign-in refuses them as it refuses a deactivated person, though the
// provider may still sign them in: without it a person unknown to the
// directory falls back to the ID token's groups. Creating a user of that
// userName or externalId again removes the tombstone: the IdP has
// provisioned the person anew, and they sign in under the new resource's
// groups with fresh keys (the revoked ones stay revoked).
package scim

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
)

// The schema URNs of RFC 7643 and RFC 7644.
const (
	UserSchema   = "urn:ietf:params:scim:schemas:core:2.0:User"
	GroupSchema  = "urn:ietf:params:scim:schemas:core:2.0:Group"
	ListSchema   = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
	ErrorSchema  = "urn:ietf:params:scim:api:messages:2.0:Error"
	PatchSchema  = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
	BasePath     = "/scim/v2"
	maxBodyBytes = 1 << 20
)

// Person names a provisioned user the way keys name their owner: the
// userName (usually the email) and the IdP's externalId.
type Person struct {
	UserName   string
	ExternalID string
}

// Keys acts on the keys people hold.
type Keys interface {
	// Revoke revokes every key p holds; it returns how many.
	Revoke(ctx context.Context, p Person) (int, error)
	// Regrant moves p's keys to what their groups (display names) grant;
	// it returns how many keys changed.
	Regrant(ctx context.Context, p Person, groups []string) (int, error)
}

// StoreSource yields the ledger's store once it is open.
type StoreSource interface {
	WaitStore(ctx context.Context) ledger.ControlStore
}

// Handler serves /scim/v2.
type Handler struct {
	Token  string // the bearer token the IdP presents; empty refuses all
	Source StoreSource
	Keys   Keys           // nil: no key is touched
	Audit  audit.Recorder // nil: nothing recorded
	Now    func() time.Time

	dir directoryCache // what sign-in asks of the directory (directory.go)
}

func (h *Handler) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

func writeError(w http.ResponseWriter, status int, scimType, detail string) {
	body := map[string]any{"schemas": []string{ErrorSchema}, "status": strconv.Itoa(status), "detail": detail}
	if scimType != "" {
		body["scimType"] = scimType
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/scim+json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func fail(w http.ResponseWriter, err error) {
	var se *scimError
	switch {
	case errors.As(err, &se):
		writeError(w, se.status, se.scimType, se.detail)
	case errors.Is(err, ledger.ErrSCIMNotFound):
		writeError(w, http.StatusNotFound, "", "resource not found")
	case errors.Is(err, ledger.ErrSCIMConflict):
		writeError(w, http.StatusConflict, "uniqueness", "userName is already taken")
	default:
		writeError(w, http.StatusServiceUnavailable, "", "the directory cannot be read or written right now; retry")
	}
}

// ServeHTTP checks the bearer token and routes the request.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	auth := r.Header.Get("Authorization")
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok {
		tok, ok = strings.CutPrefix(auth, "bearer ")
	}
	if !ok || h.Token == "" || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(tok)), []byte(h.Token)) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="scim"`)
		writeError(w, http.StatusUnauthorized, "", "missing or wrong SCIM bearer token (llm_auth scim_token)")
		return
	}
	rest := strings.Trim(strings.TrimPrefix(r.URL.Path, BasePath), "/")
	kind, id, _ := strings.Cut(rest, "/")
	switch kind {
	case "ServiceProviderConfig":
		writeJSON(w, 200, serviceProviderConfig())
		return
	case "Schemas":
		writeJSON(w, 200, listOf(schemas(), 1))
		return
	case "ResourceTypes":
		writeJSON(w, 200, listOf(resourceTypes(), 1))
		return
	case "Users", "Groups":
	default:
		writeError(w, http.StatusNotFound, "", "no SCIM endpoint "+r.URL.Path)
		return
	}
	store, ok := h.Source.WaitStore(r.Context()).(ledger.SCIMStore)
	if !ok {
		w.Header().Set("Retry-After", "5")
		writeError(w, http.StatusServiceUnavailable, "", "the directory is still opening (the ledger database is not reachable yet); retry")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	r = r.WithContext(ctx)
	c := &call{h: h, store: store, w: w, r: r}
	users := kind == "Users"
	var err error
	switch {
	case id == "" && r.Method == http.MethodGet:
		err = c.list(users)
	case id == "" && r.Method == http.MethodPost:
		err = c.create(users)
	case id != "" && r.Method == http.MethodGet:
		err = c.get(users, id)
	case id != "" && r.Method == http.MethodPut:
		err = c.replace(users, id)
	case id != "" && r.Method == http.MethodPatch:
		err = c.patch(users, id)
	case id != "" && r.Method == http.MethodDelete:
		err = c.delete(users, id)
	default:
		w.Header().Set("Allow", "GET, POST, PUT, PATCH, DELETE")
		writeError(w, http.StatusMethodNotAllowed, "", "method "+r.Method+" not allowed on "+r.URL.Path)
		return
	}
	if err != nil {
		fail(w, err)
	}
}

type call struct {
	h     *Handler
	store ledger.SCIMStore
	w     http.ResponseWriter
	r     *http.Request
}

func (c *call) record(action, target string, fields map[string]string) {
	if c.h.Audit == nil {
		return
	}
	c.h.Audit.Record(c.r.Context(), audit.Event{Time: c.h.now(), Actor: "scim", Action: action, Target: target, Source: audit.SourceOf(c.r), Fields: fields})
}

func (c *call) body() (map[string]any, error) {
	b, err := io.ReadAll(io.LimitReader(c.r.Body, maxBodyBytes+1))
	if err != nil {
		return nil, badRequest("invalidSyntax", "reading the body: %v", err)
	}
	if len(b) > maxBodyBytes {
		return nil, &scimError{status: http.StatusRequestEntityTooLarge, detail: "the body is over 1 MiB"}
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, badRequest("invalidSyntax", "the body is not a JSON object: %v", err)
	}
	return m, nil
}

func newID() string { return strings.ToLower(rand.Text()) }

// location is a resource's URL, from the request's own host.
func (c *call) location(kind, id string) string {
	scheme := "https"
	if c.r.TLS == nil {
		scheme = "http"
	}
	return scheme + "://" + c.r.Host + BasePath + "/" + kind + "/" + id
}

// page cuts list to startIndex (1-based) and count (RFC 7644 §3.4.2.4).
func (c *call) page(total int) (lo, hi, start int, err error) {
	q := c.r.URL.Query()
	start, count := 1, 100
	if v := q.Get("startIndex"); v != "" {
		n, e := strconv.Atoi(v)
		if e != nil {
			return 0, 0, 0, badRequest("invalidValue", "startIndex: must be an integer")
		}
		start = max(n, 1)
	}
	if v := q.Get("count"); v != "" {
		n, e := strconv.Atoi(v)
		if e != nil {
			return 0, 0, 0, badRequest("invalidValue", "count: must be an integer")
		}
		count = min(max(n, 0), 1000)
	}
	lo = min(start-1, total)
	hi = min(lo+count, total)
	return lo, hi, start, nil
}

func listOf(resources []any, start int) map[string]any {
	if resources == nil {
		resources = []any{}
	}
	return map[string]any{"schemas": []string{ListSchema}, "totalResults": len(resources), "startIndex": start,
		"itemsPerPage": len(resources), "Resources": resources}
}

func (c *call) list(users bool) error {
	docs, err := c.all(users)
	if err != nil {
		return err
	}
	if f := c.r.URL.Query().Get("filter"); f != "" {
		filter, err := ParseFilter(f)
		if err != nil {
			return err
		}
		var kept []map[string]any
		for _, d := range docs {
			if filter.Matches(d) {
				kept = append(kept, d)
			}
		}
		docs = kept
	}
	lo, hi, start, err := c.page(len(docs))
	if err != nil {
		return err
	}
	out := make([]any, 0, hi-lo)
	for _, d := range docs[lo:hi] {
		out = append(out, d)
	}
	l := listOf(out, start)
	l["totalResults"] = len(docs)
	writeJSON(c.w, 200, l)
	return nil
}

// all is every user (with their groups) or group, as resources.
func (c *call) all(users bool) ([]map[string]any, error) {
	groups, err := c.store.SCIMGroups(c.r.Context())
	if err != nil {
		return nil, err
	}
	var out []map[string]any
	if !users {
		for _, g := range groups {
			out = append(out, c.groupDoc(g))
		}
		return out, nil
	}
	us, err := c.store.SCIMUsers(c.r.Context())
	if err != nil {
		return nil, err
	}
	for _, u := range us {
		out = append(out, c.userDoc(u, groups))
	}
	return out, nil
}

func (c *call) get(users bool, id string) error {
	doc, err := c.load(users, id)
	if err != nil {
		return err
	}
	writeJSON(c.w, 200, doc)
	return nil
}

func (c *call) load(users bool, id string) (map[string]any, error) {
	if users {
		u, err := c.store.SCIMUser(c.r.Context(), id)
		if err != nil {
			return nil, err
		}
		groups, err := c.store.SCIMGroups(c.r.Context())
		if err != nil {
			return nil, err
		}
		return c.userDoc(u, groups), nil
	}
	g, err := c.store.SCIMGroup(c.r.Context(), id)
	if err != nil {
		return nil, err
	}
	return c.groupDoc(g), nil
}

func (c *call) create(users bool) error {
	in, err := c.body()
	if err != nil {
		return err
	}
	id := newID()
	now := c.h.now().UTC()
	if users {
		u, err := userFrom(in)
		if err != nil {
			return err
		}
		u.ID, u.Meta.Created, u.Meta.LastModified = id, now, now
		if err := c.putUser(u); err != nil {
			return err
		}
		c.record("scim.user.create", u.UserName, u.fields())
		return c.respond(http.StatusCreated, true, id)
	}
	g, err := groupFrom(in)
	if err != nil {
		return err
	}
	g.ID, g.Meta.Created, g.Meta.LastModified = id, now, now
	if err := c.putGroup(g); err != nil {
		return err
	}
	c.record("scim.group.create", g.DisplayName, map[string]string{"displayName": g.DisplayName, "members": memberList(g.Members)})
	c.regrant(nil, g.Members)
	return c.respond(http.StatusCreated, false, id)
}

func (c *call) respond(status int, users bool, id string) error {
	doc, err := c.load(users, id)
	if err != nil {
		return err
	}
	c.w.Header().Set("Location", doc["meta"].(map[string]any)["location"].(string))
	writeJSON(c.w, status, doc)
	return nil
}

// replace is PUT: the body replaces the resource (its id and created
// time stay).
func (c *call) replace(users bool, id string) error {
	in, err := c.body()
	if err != nil {
		return err
	}
	return c.update(users, id, func(doc map[string]any) error {
		keep := map[string]any{"id": doc["id"], "meta": doc["meta"]}
		for k := range doc {
			delete(doc, k)
		}
		for k, v := range in {
			doc[k] = v
		}
		for k, v := range keep {
			doc[k] = v
		}
		return nil
	})
}

func (c *call) patch(users bool, id string) error {
	b, err := io.ReadAll(io.LimitReader(c.r.Body, maxBodyBytes))
	if err != nil {
		return badRequest("invalidSyntax", "reading the body: %v", err)
	}
	var req PatchRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return badRequest("invalidSyntax", "the body is not a PatchOp: %v", err)
	}
	multi := map[string]bool{"emails": true, "members": true, "phoneNumbers": true}
	return c.update(users, id, func(doc map[string]any) error { return Apply(doc, req.Operations, multi) })
}

// update applies change to the stored resource and acts on what changed.
func (c *call) update(users bool, id string, change func(map[string]any) error) error {
	doc, err := c.load(users, id)
	if err != nil {
		return err
	}
	if err := change(doc); err != nil {
		return err
	}
	doc["id"] = id
	now := c.h.now().UTC()
	if users {
		before, err := c.store.SCIMUser(c.r.Context(), id)
		if err != nil {
			return err
		}
		old, err := decodeUser(before.Doc)
		if err != nil {
			return err
		}
		u, err := userFrom(doc)
		if err != nil {
			return err
		}
		u.ID, u.Meta.Created, u.Meta.LastModified = id, old.Meta.Created, now
		if err := c.putUser(u); err != nil {
			return err
		}
		fields := audit.Diff(old.fields(), u.fields())
		action := "scim.user.update"
		if old.Active && !u.Active {
			action = "scim.user.deactivate"
			n, err := c.revoke(u)
			if err != nil {
				return err
			}
			fields["revoked_keys"] = strconv.Itoa(n)
		} else if !old.Active && u.Active {
			action = "scim.user.reactivate"
		}
		c.record(action, u.UserName, fields)
		return c.respond(http.StatusOK, true, id)
	}
	before, err := c.store.SCIMGroup(c.r.Context(), id)
	if err != nil {
		return err
	}
	old, err := decodeGroup(before.Doc)
	if err != nil {
		return err
	}
	g, err := groupFrom(doc)
	if err != nil {
		return err
	}
	g.ID, g.Meta.Created, g.Meta.LastModified = id, old.Meta.Created, now
	if err := c.putGroup(g); err != nil {
		return err
	}
	fields := map[string]string{}
	if g.DisplayName != old.DisplayName {
		fields["displayName"] = g.DisplayName
	}
	added, removed := diffMembers(old.Members, g.Members)
	if len(added) > 0 {
		fields["members_added"] = memberList(added)
	}
	if len(removed) > 0 {
		fields["members_removed"] = memberList(removed)
	}
	c.record("scim.group.update", g.DisplayName, fields)
	if g.DisplayName != old.DisplayName {
		c.regrant(nil, g.Members) // every member's groups changed name
	}
	c.regrant(added, removed)
	return c.respond(http.StatusOK, false, id)
}

func (c *call) delete(users bool, id string) error {
	if users {
		before, err := c.store.SCIMUser(c.r.Context(), id)
		if err != nil {
			return err
		}
		u, err := decodeUser(before.Doc)
		if err != nil {
			return err
		}
		n, err := c.revoke(u)
		if err != nil {
			return err
		}
		if err := c.store.DeleteSCIMUser(c.r.Context(), id); err != nil {
			return err
		}
		c.record("scim.user.delete", u.UserName, map[string]string{"revoked_keys": strconv.Itoa(n)})
	} else {
		before, err := c.store.SCIMGroup(c.r.Context(), id)
		if err != nil {
			return err
		}
		g, err := decodeGroup(before.Doc)
		if err != nil {
			return err
		}
		if err := c.store.DeleteSCIMGroup(c.r.Context(), id); err != nil {
			return err
		}
		c.record("scim.group.delete", g.DisplayName, map[string]string{"members": memberList(g.Members)})
		c.regrant(nil, g.Members)
	}
	c.w.WriteHeader(http.StatusNoContent)
	return nil
}

// revoke revokes u's keys and forgets their upstream MCP grants; a store
// that cannot be written fails the call (the IdP retries), since a person
// left active would keep their access.
func (c *call) revoke(u User) (int, error) {
	if g, ok := c.store.(ledger.MCPUpstreamTokenStore); ok {
		if err := forgetUpstreamGrants(c.r.Context(), g, c.h.Keys, u); err != nil {
			return 0, &scimError{status: http.StatusServiceUnavailable, detail: "the person's upstream MCP grants could not be removed; retry"}
		}
	}
	if c.h.Keys == nil {
		return 0, nil
	}
	n, err := c.h.Keys.Revoke(c.r.Context(), u.person())
	if err != nil {
		return n, &scimError{status: http.StatusServiceUnavailable, detail: "the person's keys could not be revoked; retry"}
	}
	return n, nil
}

// regrant re-resolves the keys of the members whose groups changed.
func (c *call) regrant(lists ...[]Member) {
	if c.h.Keys == nil {
		return
	}
	seen := map[string]bool{}
	groups, err := c.store.SCIMGroups(c.r.Context())
	if err != nil {
		return
	}
	for _, list := range lists {
		for _, m := range list {
			if seen[m.Value] {
				continue
			}
			seen[m.Value] = true
			su, err := c.store.SCIMUser(c.r.Context(), m.Value)
			if err != nil {
				continue
			}
			u, err := decodeUser(su.Doc)
			if err != nil || !u.Active {
				continue
			}
			names := groupNames(u.ID, groups)
			n, err := c.h.Keys.Regrant(c.r.Context(), u.person(), names)
			if err == nil && n > 0 {
				c.record("scim.user.regrant", u.UserName, map[string]string{"groups": strings.Join(names, ","), "moved_keys": strconv.Itoa(n)})
			}
		}
	}
}

func groupNames(userID string, groups []ledger.SCIMGroup) []string {
	var names []string
	for _, sg := range groups {
		g, err := decodeGroup(sg.Doc)
		if err != nil {
			continue
		}
		for _, m := range g.Members {
			if m.Value == userID {
				names = append(names, g.DisplayName)
				break
			}
		}
	}
	sort.Strings(names)
	return names
}

func diffMembers(old, cur []Member) (added, removed []Member) {
	in := func(list []Member, v string) bool {
		for _, m := range list {
			if m.Value == v {
				return true
			}
		}
		return false
	}
	for _, m := range cur {
		if !in(old, m.Value) {
			added = append(added, m)
		}
	}
	for _, m := range old {
		if !in(cur, m.Value) {
			removed = append(removed, m)
		}
	}
	return added, removed
}

func memberList(ms []Member) string {
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.Value)
	}
	return strings.Join(ids, ",")
}
