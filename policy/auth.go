package policy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
)

// Key is one configured client key. Secret is never logged or echoed.
type Key struct {
	Secret    string
	ID        string // defaults to a fingerprint of Secret
	Workspace string
	Models    []string // nil or empty allows every alias
	MCP       []string // MCP allow-list ("server" or "server/tool"); nil allows every server
	Admin     bool
	Limits    ledger.Limits // budgets and rates
}

type storedKey struct {
	digest [sha256.Size]byte
	id     *Identity
}

// Auth authenticates callers by key. It compares SHA-256 digests in
// constant time against every configured key, so neither the match
// position nor a near-miss is observable in timing.
type Auth struct {
	keys []storedKey
	// runtime are the keys of the ledger database, when there is one.
	runtime *Controls
}

// WithRuntime makes the keys in c's snapshot valid too.
func (a *Auth) WithRuntime(c *Controls) { a.runtime = c }

// Changed is closed when the runtime keys or workspaces change; nil
// without runtime keys (the Caddyfile's keys change only with a reload).
func (a *Auth) Changed() <-chan struct{} { return a.runtime.Changed() }

// Identities are the Caddyfile's keys, for listing.
func (a *Auth) Identities() []*Identity {
	out := make([]*Identity, len(a.keys))
	for i := range a.keys {
		out[i] = a.keys[i].id
	}
	return out
}

// Fingerprint is the default key id: short, stable and not reversible for
// a high-entropy secret, so logs and reports can tell keys apart safely.
func Fingerprint(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return "key-" + hex.EncodeToString(sum[:4])
}

// NewAuth validates keys; errors name the key by position and id, never
// by its secret.
func NewAuth(keys []Key) (*Auth, error) {
	a := &Auth{}
	seen := make(map[[sha256.Size]byte]int, len(keys))
	ids := make(map[string]int, len(keys))
	for i, k := range keys {
		if k.Secret == "" {
			return nil, fmt.Errorf("key %d: secret is empty; set the environment variable the key placeholder names", i+1)
		}
		if len(k.Secret) < 8 {
			return nil, fmt.Errorf("key %d: secret is shorter than 8 characters; use a long random value", i+1)
		}
		id := k.ID
		if id == "" {
			id = Fingerprint(k.Secret)
		}
		d := sha256.Sum256([]byte(k.Secret))
		if j, dup := seen[d]; dup {
			return nil, fmt.Errorf("key %d (id %q): same secret as key %d; every key needs its own secret", i+1, id, j+1)
		}
		if j, dup := ids[id]; dup {
			return nil, fmt.Errorf("key %d: id %q already used by key %d; ids must be unique", i+1, id, j+1)
		}
		seen[d], ids[id] = i, i
		ident := &Identity{KeyID: id, Workspace: k.Workspace, Role: RoleUser, Limits: k.Limits}
		if k.Admin {
			ident.Role = RoleAdmin
		}
		ident.MCP = k.MCP
		if len(k.Models) > 0 {
			ident.Models = make(map[string]struct{}, len(k.Models))
			for _, m := range k.Models {
				ident.Models[m] = struct{}{}
			}
		}
		a.keys = append(a.keys, storedKey{digest: d, id: ident})
	}
	if len(a.keys) == 0 {
		return nil, errors.New("no keys configured; add at least one key or admin_key")
	}
	return a, nil
}

// Identify returns the caller whose key secret is (the key the request
// presented, "" for none), or an error in no particular format (the
// caller renders it in the client's family).
func (a *Auth) Identify(secret string) (*Identity, *apierror.Error) {
	if secret == "" {
		return nil, &apierror.Error{Status: http.StatusUnauthorized,
			Message: "missing API key: send Authorization: Bearer <key>, x-api-key: <key> or (Gemini API) x-goog-api-key: <key>"}
	}
	d := sha256.Sum256([]byte(secret))
	var found *Identity
	for i := range a.keys {
		if subtle.ConstantTimeCompare(d[:], a.keys[i].digest[:]) == 1 {
			found = a.keys[i].id
		}
	}
	if found != nil {
		return a.checkWorkspace(found)
	}
	if rk := a.runtime.lookup(d); rk != nil {
		switch {
		case rk.status == "archived":
			return nil, &apierror.Error{Status: http.StatusUnauthorized, Code: "invalid_api_key",
				Message: "API key " + rk.id.KeyID + " is archived, which is final; ask an admin for a new key"}
		case rk.status != "active":
			return nil, &apierror.Error{Status: http.StatusUnauthorized, Code: "invalid_api_key",
				Message: "API key " + rk.id.KeyID + " is " + rk.status + "; ask an admin to reactivate it or to issue a new one"}
		case !rk.expires.IsZero() && !a.runtime.now().Before(rk.expires):
			return nil, &apierror.Error{Status: http.StatusUnauthorized, Code: "invalid_api_key",
				Message: "API key " + rk.id.KeyID + " expired at " + rk.expires.Format(time.RFC3339)}
		}
		return a.checkWorkspace(rk.id)
	}
	return nil, &apierror.Error{Status: http.StatusUnauthorized, Message: "invalid API key"}
}

// checkWorkspace refuses a key whose workspace is archived: archiving a
// workspace is how an admin stops a team's use, so its keys stop with it
// (on every instance at the next poll of the key store, within 2 s).
func (a *Auth) checkWorkspace(id *Identity) (*Identity, *apierror.Error) {
	if a.runtime.archivedWorkspace(id.Workspace) {
		return nil, &apierror.Error{Status: http.StatusForbidden, Code: "workspace_archived", NoRetry: true,
			Message: "API key " + id.KeyID + " belongs to workspace " + id.Workspace + ", which is archived; ask an admin for a key in an active workspace"}
	}
	return id, nil
}

// UIPath is where the dashboard lives (llm_admin serves it).
const UIPath = "/ui/"

// IsUIPath reports the dashboard's paths.
func IsUIPath(p string) bool { return p == "/ui" || strings.HasPrefix(p, UIPath) }

// IsBrowserRoot reports a browser opening the site's root (it asks for
// HTML), which is sent to the dashboard instead of an API client's 401.
// The redirect is answered by whoever sees it first (llm_auth for a
// request without a key, else llm_admin): the request is never passed on
// unauthenticated to what follows on the site.
func IsBrowserRoot(r *http.Request) bool {
	return r.URL.Path == "/" && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html")
}

// IsPublicPath reports the paths answered without a key: Claude Code's
// reachability probe, the liveness/readiness checks, the dashboard's pages
// (the spend-limit approvers' link page among them: its POST needs an
// approver's key or session), MCP approval links and the loop breaker's
// resume link.
func IsPublicPath(r *http.Request) bool {
	switch r.URL.Path {
	case "/health/liveliness", "/health/liveness", "/health/readiness":
		return r.Method == http.MethodGet || r.Method == http.MethodHead
	case "/":
		return r.Method == http.MethodHead
	case breaker.ResumePath:
		// A loop breaker's resume link: its token is its credential.
		return r.Method == http.MethodGet || r.Method == http.MethodPost
	}
	// MCP tool calls' approvers' chat link: its token is the credential.
	if strings.HasPrefix(r.URL.Path, "/mcp-approvals/") {
		return r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodPost
	}
	// The dashboard's page and assets: it signs in itself.
	return IsUIPath(r.URL.Path) && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// PathSet is a set of paths matched the way Caddy's path matcher would
// take a request's path: case-insensitive, with repeated slashes and dot
// segments cleaned, so "/METRICS" or "//metrics" cannot slip past a rule
// that a `metrics /metrics` handler would still serve. A path ending in
// "*" matches its prefix. The patterns are normalised once, when the set
// is built; a request pays for cleaning its own path only when it needs
// it.
type PathSet struct {
	exact    []string
	prefixes []string
}

// NewPathSet builds the set of paths.
func NewPathSet(paths []string) PathSet {
	var s PathSet
	for _, want := range paths {
		want = strings.ToLower(want)
		if pre, ok := strings.CutSuffix(want, "*"); ok {
			s.prefixes = append(s.prefixes, pre)
			continue
		}
		s.exact = append(s.exact, path.Clean(want))
	}
	return s
}

// Match reports whether r's path is in the set.
func (s PathSet) Match(r *http.Request) bool {
	if len(s.exact) == 0 && len(s.prefixes) == 0 {
		return false
	}
	p := r.URL.Path
	if !isCleanLower(p) {
		p = path.Clean("/" + strings.ToLower(p))
	}
	for _, want := range s.exact {
		if p == want {
			return true
		}
	}
	for _, pre := range s.prefixes {
		if strings.HasPrefix(p, pre) || p+"/" == pre {
			return true
		}
	}
	return false
}

// isCleanLower reports a path path.Clean would keep and ToLower would not
// change: most requests' paths, which then need no copy.
func isCleanLower(p string) bool {
	if p == "" || p[0] != '/' || (len(p) > 1 && p[len(p)-1] == '/') {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := p[i]
		if 'A' <= c && c <= 'Z' || c >= 0x80 {
			return false
		}
		if c == '/' && i+1 < len(p) && (p[i+1] == '/' || p[i+1] == '.') {
			return false
		}
	}
	return true
}
