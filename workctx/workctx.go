// Package workctx is what a coding session works on: a repository, a
// branch and its head commit, as an agent's hook finds them in the
// session's working directory and as the gateway stores them. It reads
// and cleans only; it imports nothing of the gateway, so the hook that
// runs beside the agent links none of the server.
package workctx

import (
	"net/http"
	"net/url"
	"path"
	"strings"
)

// Context is the JSON body of POST /v1/work/context, the hook's report.
type Context struct {
	SessionID  string `json:"session_id"`
	Repository string `json:"repository"`
	Branch     string `json:"branch"`
	Head       string `json:"head"`
}

// Path is where the gateway takes a Context.
const Path = "/v1/work/context"

// Headers a client without hooks sends on its model requests instead.
const (
	RepoHeader   = "X-Modelgate-Repo"
	BranchHeader = "X-Modelgate-Branch"
)

// maxField bounds every stored string.
const maxField = 200

// NormalizeRepo turns a git remote URL into the repository's name as the
// reports show it and the forge's webhooks are matched to: host and path,
// lower case, without scheme, port, credentials, query or ".git"
// ("https://bot:token@GitHub.com/Acme/Shop.git" and
// "git@github.com:acme/shop" are both "github.com/acme/shop"), and
// without what follows the repository in its path (repoPath), where a
// token pasted into the URL would otherwise be stored. A local
// path, or anything that does not read as a remote, is "": it names no
// shared repository, and a path may hold a person's name.
func NormalizeRepo(remote string) string {
	s := strings.TrimSpace(remote)
	if s == "" || len(s) > 2048 {
		return ""
	}
	var host, p string
	if i := strings.Index(s, "://"); i >= 0 {
		u, err := url.Parse(s)
		if err != nil || u.Scheme == "file" {
			return ""
		}
		host, p = u.Hostname(), u.Path
	} else {
		// scp-like syntax: [user@]host:path, where the host has no slash.
		at := strings.LastIndexByte(s, '@')
		rest := s[at+1:]
		colon := strings.IndexByte(rest, ':')
		slash := strings.IndexByte(rest, '/')
		switch {
		case colon >= 0:
			host, p = rest[:colon], rest[colon+1:]
		case slash > 0 && strings.Contains(rest[:slash], "."):
			// Already a name: host/path, as a header may carry it.
			host, p = rest[:slash], rest[slash+1:]
		default:
			return ""
		}
		if strings.ContainsAny(host, "/\\") {
			return ""
		}
	}
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	p = trimRepoTail(repoPath(host, strings.Trim(path.Clean("/"+p), "/")))
	p = strings.ToLower(p)
	// A host without a dot is not a forge every machine names alike (and
	// the short "host/path" form must read back as itself).
	if !strings.Contains(host, ".") || !safe(host, ".-") || strings.HasPrefix(host, ".") || strings.HasSuffix(host, ".") || strings.Contains(host, "..") ||
		p == "" || p == "." {
		return ""
	}
	out := host + "/" + p
	if len(out) > maxField || !safe(out, "._~/-") {
		return ""
	}
	return out
}

// CleanBranch keeps a branch name that can be stored and shown: printable,
// at most 200 bytes, not "HEAD" (a detached head has no branch).
func CleanBranch(b string) string {
	b = strings.TrimPrefix(strings.TrimSpace(b), "refs/heads/")
	if b == "" || b == "HEAD" || len(b) > maxField {
		return ""
	}
	for i := 0; i < len(b); i++ {
		if b[i] <= 0x20 || b[i] >= 0x7f {
			return ""
		}
	}
	return b
}

// CleanHead keeps a commit id: 40 (SHA-1) or 64 (SHA-256) hex digits,
// lower case.
func CleanHead(h string) string {
	h = strings.ToLower(strings.TrimSpace(h))
	if (len(h) != 40 && len(h) != 64) || !safe(h, "") || strings.ContainsAny(h, "ghijklmnopqrstuvwxyz") {
		return ""
	}
	return h
}

// CleanSession keeps a session id as the gateway's requests carry it: at
// most 128 printable ASCII characters.
func CleanSession(s string) string {
	if s == "" || len(s) > 128 {
		return ""
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return ""
		}
	}
	return s
}

// Clean normalises every field of c; Repository "" means c names no
// repository and is not worth storing.
func (c Context) Clean() Context {
	return Context{SessionID: CleanSession(c.SessionID), Repository: NormalizeRepo(c.Repository),
		Branch: CleanBranch(c.Branch), Head: CleanHead(c.Head)}
}

func safe(s, extra string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.IndexByte(extra, c) >= 0 {
			continue
		}
		return false
	}
	return true
}

// ScrubHeader replaces a request's RepoHeader with the repository's name,
// so that neither an access log nor anything downstream sees the
// credentials a remote URL may carry; a value that reads as no remote is
// dropped. A request without the header pays one map lookup.
func ScrubHeader(h http.Header) {
	v, ok := h[RepoHeader]
	if !ok {
		return
	}
	repo := ""
	if len(v) > 0 {
		repo = NormalizeRepo(v[0])
	}
	if repo == "" {
		delete(h, RepoHeader)
		return
	}
	h[RepoHeader] = []string{repo}
}
