package scim

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelgate/modelgate/ledger"
)

// Name is a user's name (RFC 7643 §4.1.1).
type Name struct {
	Formatted  string `json:"formatted,omitempty"`
	GivenName  string `json:"givenName,omitempty"`
	FamilyName string `json:"familyName,omitempty"`
}

// Email is one of a user's addresses.
type Email struct {
	Value   string `json:"value"`
	Type    string `json:"type,omitempty"`
	Primary bool   `json:"primary,omitempty"`
}

// Member is a group member (a user's id) or a user's group.
type Member struct {
	Value   string `json:"value"`
	Display string `json:"display,omitempty"`
	Ref     string `json:"$ref,omitempty"`
}

// Meta is a resource's metadata.
type Meta struct {
	ResourceType string    `json:"resourceType"`
	Created      time.Time `json:"created"`
	LastModified time.Time `json:"lastModified"`
	Location     string    `json:"location,omitempty"`
}

// User is the stored part of a User resource: the attributes the
// gateway uses or shows. Others a provider sends are ignored, as RFC 7644
// §3.3 allows.
type User struct {
	ID          string  `json:"id"`
	ExternalID  string  `json:"externalId,omitempty"`
	UserName    string  `json:"userName"`
	Name        *Name   `json:"name,omitempty"`
	DisplayName string  `json:"displayName,omitempty"`
	Emails      []Email `json:"emails,omitempty"`
	Active      bool    `json:"active"`
	Meta        Meta    `json:"meta"`
}

// Group is the stored part of a Group resource.
type Group struct {
	ID          string   `json:"id"`
	ExternalID  string   `json:"externalId,omitempty"`
	DisplayName string   `json:"displayName"`
	Members     []Member `json:"members"`
	Meta        Meta     `json:"meta"`
}

func (u User) person() Person { return Person{UserName: u.UserName, ExternalID: u.ExternalID} }

// fields are what the audit log shows of a user (no secret: a password
// a provider sends is never stored).
func (u User) fields() map[string]string {
	m := map[string]string{"userName": u.UserName, "externalId": u.ExternalID, "active": strconv.FormatBool(u.Active), "displayName": u.DisplayName}
	if u.Name != nil {
		m["name.givenName"], m["name.familyName"] = u.Name.GivenName, u.Name.FamilyName
	}
	for _, e := range u.Emails {
		if e.Primary || len(u.Emails) == 1 {
			m["email"] = e.Value
		}
	}
	return m
}

// boolOf reads active as JSON true/false or the strings "True"/"False"
// Entra ID sends in PATCH values.
func boolOf(v any) (bool, bool) {
	switch t := v.(type) {
	case bool:
		return t, true
	case string:
		b, err := strconv.ParseBool(strings.ToLower(t))
		return b, err == nil
	}
	return false, false
}

// canonical renames attributes to their schema spelling (names are
// case-insensitive on the wire) and drops what the stored types do not
// keep.
func canonical(in map[string]any, names []string) map[string]any {
	out := map[string]any{}
	for _, n := range names {
		if v, ok := get(in, n); ok {
			out[n] = v
		}
	}
	return out
}

func userFrom(in map[string]any) (User, error) {
	m := canonical(in, []string{"externalId", "userName", "name", "displayName", "emails", "active"})
	active := true
	if v, ok := m["active"]; ok {
		b, ok := boolOf(v)
		if !ok {
			return User{}, badRequest("invalidValue", "active: must be true or false")
		}
		active = b
	}
	delete(m, "active")
	if n, ok := m["name"].(map[string]any); ok {
		m["name"] = canonical(n, []string{"formatted", "givenName", "familyName"})
	}
	if es, ok := m["emails"].([]any); ok {
		for i, e := range es {
			if em, ok := e.(map[string]any); ok {
				c := canonical(em, []string{"value", "type", "primary"})
				if p, ok := c["primary"]; ok {
					c["primary"], _ = boolOf(p)
				}
				es[i] = c
			}
		}
	}
	b, _ := json.Marshal(m)
	var u User
	if err := json.Unmarshal(b, &u); err != nil {
		return u, badRequest("invalidValue", "the user's attributes have the wrong types: %v", err)
	}
	u.Active = active
	if strings.TrimSpace(u.UserName) == "" {
		return u, badRequest("invalidValue", "userName: required")
	}
	if !ledger.StorableText(u.UserName) || !ledger.StorableText(u.ExternalID) {
		return u, badRequest("invalidValue", "userName and externalId must be valid UTF-8 text")
	}
	return u, u.bounded()
}

// Bounds on what a provider may store: an email is at most 254
// characters, and no IdP sends names or ids near these; a body within
// maxBodyBytes could otherwise keep a 70 000-character userName in every
// instance's directory view.
const (
	maxIDLength     = 256  // userName, externalId, an email, a member's id
	maxTextLength   = 1024 // displayName and the name's parts
	maxEmails       = 20
	maxGroupMembers = 50000
)

// text is a string field and its bound, in characters.
type text struct {
	field, v string
	limit    int
}

// firstTooLong is the 400 for the first field past its bound, or nil.
func firstTooLong(fields []text) error {
	for _, f := range fields {
		if n := utf8.RuneCountInString(f.v); n > f.limit {
			return badRequest("invalidValue", "%s: at most %d characters (got %d)", f.field, f.limit, n)
		}
	}
	return nil
}

// bounded checks every string field against its bound.
func (u User) bounded() error {
	if len(u.Emails) > maxEmails {
		return badRequest("invalidValue", "emails: at most %d addresses (got %d)", maxEmails, len(u.Emails))
	}
	fields := []text{{"userName", u.UserName, maxIDLength}, {"externalId", u.ExternalID, maxIDLength}, {"displayName", u.DisplayName, maxTextLength}}
	if u.Name != nil {
		fields = append(fields, text{"name.formatted", u.Name.Formatted, maxTextLength}, text{"name.givenName", u.Name.GivenName, maxTextLength},
			text{"name.familyName", u.Name.FamilyName, maxTextLength})
	}
	for _, e := range u.Emails {
		fields = append(fields, text{"emails.value", e.Value, maxIDLength}, text{"emails.type", e.Type, maxIDLength})
	}
	return firstTooLong(fields)
}

// bounded checks a group's name and members against their bounds.
func (g Group) bounded() error {
	if len(g.Members) > maxGroupMembers {
		return badRequest("invalidValue", "members: at most %d (got %d)", maxGroupMembers, len(g.Members))
	}
	fields := []text{{"displayName", g.DisplayName, maxIDLength}, {"externalId", g.ExternalID, maxIDLength}}
	for _, m := range g.Members {
		fields = append(fields, text{"members.value", m.Value, maxIDLength}, text{"members.display", m.Display, maxTextLength})
	}
	return firstTooLong(fields)
}

func groupFrom(in map[string]any) (Group, error) {
	m := canonical(in, []string{"externalId", "displayName", "members"})
	if ms, ok := m["members"].([]any); ok {
		for i, e := range ms {
			if em, ok := e.(map[string]any); ok {
				ms[i] = canonical(em, []string{"value", "display"})
			}
		}
	}
	b, _ := json.Marshal(m)
	var g Group
	if err := json.Unmarshal(b, &g); err != nil {
		return g, badRequest("invalidValue", "the group's attributes have the wrong types: %v", err)
	}
	if strings.TrimSpace(g.DisplayName) == "" {
		return g, badRequest("invalidValue", "displayName: required")
	}
	if g.Members == nil {
		g.Members = []Member{}
	}
	return g, g.bounded()
}

func decodeUser(doc []byte) (User, error) {
	var u User
	err := json.Unmarshal(doc, &u)
	return u, err
}

func decodeGroup(doc []byte) (Group, error) {
	var g Group
	err := json.Unmarshal(doc, &g)
	return g, err
}

func (c *call) putUser(u User) error {
	b, _ := json.Marshal(u)
	return c.store.PutSCIMUser(c.r.Context(), ledger.SCIMUser{ID: u.ID, UserName: u.UserName, ExternalID: u.ExternalID, Doc: b, Updated: u.Meta.LastModified})
}

func (c *call) putGroup(g Group) error {
	b, _ := json.Marshal(g)
	return c.store.PutSCIMGroup(c.r.Context(), ledger.SCIMGroup{ID: g.ID, DisplayName: g.DisplayName, Doc: b, Updated: g.Meta.LastModified})
}

// asDoc is v as a JSON object, for the wire and for PATCH.
func asDoc(v any) map[string]any {
	b, _ := json.Marshal(v)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	return m
}

func (c *call) userDoc(su ledger.SCIMUser, groups []ledger.SCIMGroup) map[string]any {
	u, _ := decodeUser(su.Doc)
	u.Meta.ResourceType, u.Meta.Location = "User", c.location("Users", u.ID)
	doc := asDoc(u)
	doc["schemas"] = []string{UserSchema}
	var gs []any
	for _, sg := range groups {
		g, err := decodeGroup(sg.Doc)
		if err != nil {
			continue
		}
		for _, m := range g.Members {
			if m.Value == u.ID {
				gs = append(gs, map[string]any{"value": g.ID, "display": g.DisplayName, "$ref": c.location("Groups", g.ID)})
				break
			}
		}
	}
	if gs != nil {
		doc["groups"] = gs
	}
	return doc
}

func (c *call) groupDoc(sg ledger.SCIMGroup) map[string]any {
	g, _ := decodeGroup(sg.Doc)
	g.Meta.ResourceType, g.Meta.Location = "Group", c.location("Groups", g.ID)
	for i := range g.Members {
		g.Members[i].Ref = c.location("Users", g.Members[i].Value)
	}
	doc := asDoc(g)
	doc["schemas"] = []string{GroupSchema}
	return doc
}

func serviceProviderConfig() map[string]any {
	return map[string]any{
		"schemas":          []string{"urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"},
		"documentationUri": "https://github.com/modelgate/modelgate#scim-and-the-audit-log",
		"patch":            map[string]any{"supported": true},
		"bulk":             map[string]any{"supported": false, "maxOperations": 0, "maxPayloadSize": 0},
		"filter":           map[string]any{"supported": true, "maxResults": 1000},
		"changePassword":   map[string]any{"supported": false},
		"sort":             map[string]any{"supported": false},
		"etag":             map[string]any{"supported": false},
		"authenticationSchemes": []any{map[string]any{"type": "oauthbearertoken", "name": "OAuth Bearer Token",
			"description": "The token set with llm_auth scim_token", "primary": true}},
		"meta": map[string]any{"resourceType": "ServiceProviderConfig"},
	}
}

func attr(name, typ string, multi, required bool, unique string) map[string]any {
	a := map[string]any{"name": name, "type": typ, "multiValued": multi, "required": required, "caseExact": false,
		"mutability": "readWrite", "returned": "default", "uniqueness": unique}
	return a
}

func schemas() []any {
	return []any{
		map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Schema"}, "id": UserSchema, "name": "User", "description": "User Account",
			"attributes": []any{attr("userName", "string", false, true, "server"), attr("name", "complex", false, false, "none"),
				attr("displayName", "string", false, false, "none"), attr("emails", "complex", true, false, "none"),
				attr("active", "boolean", false, false, "none"), attr("groups", "complex", true, false, "none")},
			"meta": map[string]any{"resourceType": "Schema", "location": BasePath + "/Schemas/" + UserSchema}},
		map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:Schema"}, "id": GroupSchema, "name": "Group", "description": "Group",
			"attributes": []any{attr("displayName", "string", false, true, "none"), attr("members", "complex", true, false, "none")},
			"meta":       map[string]any{"resourceType": "Schema", "location": BasePath + "/Schemas/" + GroupSchema}},
	}
}

func resourceTypes() []any {
	return []any{
		map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:ResourceType"}, "id": "User", "name": "User",
			"endpoint": "/Users", "schema": UserSchema, "meta": map[string]any{"resourceType": "ResourceType", "location": BasePath + "/ResourceTypes/User"}},
		map[string]any{"schemas": []string{"urn:ietf:params:scim:schemas:core:2.0:ResourceType"}, "id": "Group", "name": "Group",
			"endpoint": "/Groups", "schema": GroupSchema, "meta": map[string]any{"resourceType": "ResourceType", "location": BasePath + "/ResourceTypes/Group"}},
	}
}
