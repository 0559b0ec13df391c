package identity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

func TestResolve(t *testing.T) {
	budget := int64(2000)
	rules := Groups{
		{Name: "admins", Role: RoleAdmin},
		{Name: "eng", Workspace: "eng", Models: []string{"claude"}, Limits: ledger.Limits{BudgetCents: &budget, BudgetPeriod: "monthly"}},
		{Name: "ml", Workspace: "ml", Models: []string{"coder", "claude"}, Limits: ledger.Limits{RPM: 5}},
		{Name: "auditors", Role: RoleAuditor},
	}
	for _, tc := range []struct {
		name      string
		groups    []string
		ok        bool
		role      Role
		workspace string
		models    []string
		budget    bool
	}{
		{"no group", []string{"sales"}, false, "", "", nil, false},
		{"member", []string{"eng"}, true, RoleMember, "eng", []string{"claude"}, true},
		{"first workspace and limits in rule order, union of models", []string{"ml", "eng"}, true, RoleMember, "eng", []string{"claude", "coder"}, true},
		{"highest role; a group without models allows all", []string{"auditors", "eng", "admins"}, true, RoleAdmin, "eng", nil, true},
		{"auditor", []string{"auditors"}, true, RoleAuditor, "", nil, false},
	} {
		g := rules.Resolve(tc.groups)
		if g.OK != tc.ok || g.Role != tc.role || g.Workspace != tc.workspace || !slices.Equal(g.Models, tc.models) || (g.Limits.BudgetCents != nil) != tc.budget {
			t.Errorf("%s: %+v", tc.name, g)
		}
		if !slices.Equal(g.Limits.Models, g.Models) {
			t.Errorf("%s: the key limits' models %v are not the grant's %v", tc.name, g.Limits.Models, g.Models)
		}
	}
	// The budget names the group whose rule set it, not the first one
	// the person is in (hostile pass 10, H10-8).
	if _, b := rules.Resolve([]string{"admins", "eng"}).Split(); b == nil || b.Group != "eng" {
		t.Errorf("the budget's group: %+v", b)
	}
	if g := (Groups{}).Resolve(nil); !g.OK || g.Role != RoleMember {
		t.Errorf("without rules every person is a member: %+v", g)
	}
}

// TestResolveMCPApproval: a person in several groups gets every group's
// mcp_approval entries (approvals only add), even from a group with no
// other limit, and the small tool list if any group has it.
func TestResolveMCPApproval(t *testing.T) {
	rpm := ledger.Limits{RPM: 5, MCPApproval: []string{"prod"}}
	rules := Groups{
		{Name: "eng", Limits: rpm},
		{Name: "oncall", Limits: ledger.Limits{MCPApproval: []string{"github/merge_pull_request", "prod"}, MCPToolSearch: true}},
	}
	g := rules.Resolve([]string{"oncall", "eng"})
	if g.Limits.RPM != 5 || !slices.Equal(g.Limits.MCPApproval, []string{"prod", "github/merge_pull_request"}) || !g.Limits.MCPToolSearch {
		t.Fatalf("grant %+v", g.Limits)
	}
	if g := rules.Resolve([]string{"oncall"}); !slices.Equal(g.Limits.MCPApproval, []string{"github/merge_pull_request", "prod"}) {
		t.Fatalf("a group with only mcp_approval: %+v", g.Limits)
	}
}

func TestSafeReturn(t *testing.T) {
	for in, want := range map[string]string{
		"/ui/#keys": "/ui/#keys", "/ui/": "/ui/", "": "/ui/", "//evil.example/": "/ui/", "https://evil.example/": "/ui/",
		"/\\evil.example": "/ui/", "ui/": "/ui/", "/ui/\r\nSet-Cookie: x": "/ui/",
	} {
		if got := safeReturn(in); got != want {
			t.Errorf("safeReturn(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Issuer: "http://idp.example.com", ClientID: "x"}, "must use https"},
		{Config{Issuer: "not a url", ClientID: "x"}, "oidc issuer"},
		{Config{Issuer: "https://idp.example.com"}, "client_id"},
		{Config{Issuer: "https://idp.example.com", ClientID: "x", RedirectURL: "https://gw.example.com/callback"}, "redirect_url"},
	} {
		if _, err := New(tc.cfg, nil, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%+v): %v, want an error naming %q", tc.cfg, err, tc.want)
		}
	}
}

// TestSessionCookie: a session sealed by one gateway is read by another
// with the same client secret, not by one with another; it cannot pass
// for the sign-in cookie; and state-changing calls need its CSRF token.
func TestSessionCookie(t *testing.T) {
	cfg := Config{Issuer: "https://idp.example.com", ClientID: "gw", ClientSecret: "s3cret",
		Groups: Groups{{Name: "eng", Workspace: "eng"}, {Name: "ops", Role: RoleAdmin}}}
	a, err := New(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(cfg, nil, nil)
	other := cfg
	other.ClientSecret = "other"
	c, _ := New(other, nil, nil)
	s := session{ID: "sid-1", Person: Person{Subject: "u1", Issuer: "https://idp.example.com", Email: "u1@example.com", Groups: []string{"eng"}}, Expires: time.Now().Add(time.Hour)}
	sealed, err := a.seal.seal(sessionCookie, s)
	if err != nil {
		t.Fatal(err)
	}
	req := func(method, path, csrf string) *http.Request {
		r := httptest.NewRequest(method, path, nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: sealed})
		if csrf != "" {
			r.Header.Set("X-CSRF-Token", csrf)
		}
		return r
	}
	w := httptest.NewRecorder()
	if id, handled := b.Authenticate(w, req(http.MethodGet, "/v1/organizations/api_keys", "")); handled || id == nil ||
		id.KeyID != "u1@example.com" || id.Role != policy.RoleUser || id.Workspace != "eng" || id.Person != "u1@example.com" ||
		id.Subject != "https://idp.example.com u1" {
		t.Errorf("another instance with the same secret: %+v handled %v (%s)", id, handled, w.Body)
	}
	w = httptest.NewRecorder()
	if _, handled := c.Authenticate(w, req(http.MethodGet, "/v1/organizations/api_keys", "")); !handled || w.Code != http.StatusUnauthorized {
		t.Errorf("a gateway with another secret took the cookie: %d", w.Code)
	}
	var f flow
	if err := a.seal.open(flowCookie, sealed, &f); err == nil {
		t.Errorf("a session cookie opened as a sign-in cookie")
	}
	w = httptest.NewRecorder()
	if _, handled := a.Authenticate(w, req(http.MethodPost, "/v1/organizations/api_keys", "")); !handled || w.Code != http.StatusForbidden {
		t.Errorf("POST without X-CSRF-Token: %d %s", w.Code, w.Body)
	}
	w = httptest.NewRecorder()
	if id, handled := a.Authenticate(w, req(http.MethodPost, "/v1/organizations/api_keys", a.seal.csrf("sid-1"))); handled || id == nil {
		t.Errorf("POST with the token: handled %v %d %s", handled, w.Code, w.Body)
	}
	// A session does not authorize model calls: llm_auth asks for a key.
	w = httptest.NewRecorder()
	if id, handled := a.Authenticate(w, req(http.MethodPost, "/v1/messages", a.seal.csrf("sid-1"))); handled || id != nil {
		t.Errorf("a session passed for a model call")
	}
	w = httptest.NewRecorder()
	if _, handled := a.Authenticate(w, req(http.MethodGet, MePath, "")); !handled || w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"csrf_token"`) {
		t.Errorf("GET /v1/me: %d %s", w.Code, w.Body)
	}
	// A session sealed before the issuer was recorded names no subject:
	// its upstream MCP grants are keyed as before (by email).
	old := s
	old.Person.Issuer = ""
	sealed, _ = a.seal.seal(sessionCookie, old)
	w = httptest.NewRecorder()
	if id, handled := a.Authenticate(w, req(http.MethodGet, "/v1/organizations/api_keys", "")); handled || id == nil || id.Subject != "" || id.Person != "u1@example.com" {
		t.Errorf("an older session: %+v handled %v (%s)", id, handled, w.Body)
	}
	// Expired sessions end.
	s.Expires = time.Now().Add(-time.Second)
	sealed, _ = a.seal.seal(sessionCookie, s)
	w = httptest.NewRecorder()
	if _, handled := a.Authenticate(w, req(http.MethodGet, MePath, "")); !handled || w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "ended") {
		t.Errorf("expired session: %d %s", w.Code, w.Body)
	}
}

type fakeDirectory map[string]DirectoryEntry

func (d fakeDirectory) Lookup(_ context.Context, email, _ string) (DirectoryEntry, bool) {
	e, ok := d[email]
	return e, ok
}

// TestDirectory: with a user directory wired in, a deactivated person's
// session is refused at once, and the directory's groups decide.
func TestDirectory(t *testing.T) {
	h, err := New(Config{Issuer: "https://idp.example.com", ClientID: "gw", ClientSecret: "s",
		Groups: Groups{{Name: "eng", Workspace: "eng"}, {Name: "ops", Role: RoleAdmin}}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := fakeDirectory{"u1@example.com": {Active: true, Groups: []string{"ops"}}}
	h.SetDirectory(dir)
	p := Person{Subject: "u1", Email: "u1@example.com", Groups: []string{"eng"}}
	if g, refusal := h.grantFor(context.Background(), p); refusal != "" || g.Role != RoleAdmin {
		t.Errorf("directory groups: %+v %q", g, refusal)
	}
	dir["u1@example.com"] = DirectoryEntry{Active: false}
	if _, refusal := h.grantFor(context.Background(), p); !strings.Contains(refusal, "deactivated") {
		t.Errorf("deactivated: %q", refusal)
	}
	if g, refusal := h.grantFor(context.Background(), Person{Subject: "u2", Groups: []string{"eng"}}); refusal != "" || g.Workspace != "eng" {
		t.Errorf("a person the directory does not know keeps the provider's groups: %+v %q", g, refusal)
	}
}

// TestMeModels: /v1/me says null (every alias) for a person no rule
// limits to models, not [] (which read as "nothing allowed"), and the
// union of the aliases otherwise.
func TestMeModels(t *testing.T) {
	for _, tc := range []struct {
		name   string
		groups Groups
		want   string
	}{
		{"no rules", nil, `"models":null`},
		{"a rule without models", Groups{{Name: "eng", Workspace: "eng"}}, `"models":null`},
		{"rules with models", Groups{{Name: "eng", Models: []string{"claude", "coder"}}}, `"models":["claude","coder"]`},
	} {
		h, err := New(Config{Issuer: "https://idp.example.com", ClientID: "gw", ClientSecret: "s3cret", Groups: tc.groups}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		sealed, err := h.seal.seal(sessionCookie, session{ID: "sid-1", Person: Person{Subject: "u1", Email: "u1@example.com", Groups: []string{"eng"}},
			Expires: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodGet, MePath, nil)
		r.AddCookie(&http.Cookie{Name: sessionCookie, Value: sealed})
		w := httptest.NewRecorder()
		if _, handled := h.Authenticate(w, r); !handled || w.Code != http.StatusOK || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: GET /v1/me: %d %s, want %s", tc.name, w.Code, w.Body, tc.want)
		}
	}
}
