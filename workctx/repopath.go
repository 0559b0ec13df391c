package workctx

import "strings"

// What a remote URL's path may carry past the repository: a forge's page
// (GitHub's /tree/main, GitLab's /-/merge_requests/1) or a token pasted
// into it ("https://github.com/acme/shop/ghp_…"), which would be stored
// with the repository's name and shown in every report.

// ownerRepoForges name a repository by exactly owner/repo. GitLab is not
// one: its groups nest ("gitlab.com/group/sub/app"), as a self-hosted
// GitLab's do, so any other host keeps its whole path up to a GitLab
// "-" segment or a segment that looks like a credential.
var ownerRepoForges = [...]string{"github.com", "bitbucket.org", "codeberg.org"}

// repoPath is the repository's part of path p (cleaned, no leading slash)
// on host (lower case).
func repoPath(host, p string) string {
	segs := strings.Split(p, "/")
	for i, seg := range segs {
		if seg == "-" || looksLikeCredential(seg) {
			segs = segs[:i]
			break
		}
	}
	for _, f := range ownerRepoForges {
		if host == f && len(segs) > 2 {
			segs = segs[:2]
		}
	}
	return strings.Join(segs, "/")
}

// tokenPrefixes start the forges' tokens (GitHub's, GitLab's) and
// Slack's.
var tokenPrefixes = [...]string{"ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "glpat-", "gldt-", "glptt-", "glrt-",
	"gloas-", "glcbt-", "glimt-", "glsoat-", "glffct-", "glagent-", "xoxb-", "xoxp-"}

// trimRepoTail cuts from the end of a path what names no repository:
// ".git" in any case, however often; the forge's "-" marker (repoPath
// cuts the path from one, and a cut ".git" can leave one last); a "." or
// ".." a cut leaves (".." takes the segment before, as path.Clean would);
// and a last segment a cut leaves looking like a token by the rules that
// read no case (the mixed-case rule read it before, with its ".git", as
// it always has: "AzureFunctionsV2Template.git" is a repository). What
// is left reads back as itself once lowered, and it takes one pass from
// the end: a header of 2 KB of ".git" costs its length once.
func trimRepoTail(p string) string {
	for checked := false; ; {
		switch {
		case len(p) >= 4 && strings.EqualFold(p[len(p)-4:], ".git"):
			p = p[:len(p)-4]
		case strings.HasSuffix(p, "/"):
			p = p[:len(p)-1]
		case p == "." || p == "-" || strings.HasSuffix(p, "/.") || strings.HasSuffix(p, "/-"):
			p = p[:len(p)-1]
		case p == ".." || strings.HasSuffix(p, "/.."):
			p = strings.TrimSuffix(p[:len(p)-2], "/")
			p = p[:strings.LastIndexByte(p, '/')+1]
		case !checked:
			checked = true
			if i := strings.LastIndexByte(p, '/') + 1; tokenLike(p[i:], false) {
				p = p[:i]
			}
			continue
		default:
			return p
		}
		checked = false
	}
}

// looksLikeCredential reports a path segment no repository is named
// like: a known token prefix with a long tail, an AWS access key id, a
// long hex string (classic tokens), or a long run of mixed-case letters
// and digits (base62 tokens).
// Read before the path is lowered, for the mixed case.
func looksLikeCredential(seg string) bool { return tokenLike(seg, true) }

// tokenLike is looksLikeCredential, with its mixed-case rule only when
// mixedCase is set.
func tokenLike(seg string, mixedCase bool) bool {
	if len(seg) < 20 {
		return false
	}
	lower := strings.ToLower(seg)
	for _, pre := range tokenPrefixes {
		if strings.HasPrefix(lower, pre) {
			return true
		}
	}
	var upper, low, digit, hex, other int
	for i := 0; i < len(seg); i++ {
		switch c := seg[i]; {
		case c >= '0' && c <= '9':
			digit++
			hex++
		case c >= 'a' && c <= 'z':
			low++
			if c <= 'f' {
				hex++
			}
		case c >= 'A' && c <= 'Z':
			upper++
			if c <= 'F' {
				hex++
			}
		default:
			other++
		}
	}
	if len(seg) == 20 && (strings.HasPrefix(seg, "AKIA") || strings.HasPrefix(seg, "ASIA")) && low == 0 && other == 0 {
		return true
	}
	if hex == len(seg) && len(seg) >= 32 && digit > 0 {
		return true
	}
	return mixedCase && other == 0 && len(seg) >= 24 && upper > 0 && low > 0 && digit > 0
}

// RepoProblem says why remote reads as no repository (NormalizeRepo gives
// ""), for the caller's error, without echoing it: it may hold a
// credential.
func RepoProblem(remote string) string {
	const example = "a git remote URL as `git remote get-url origin` prints it, such as https://github.com/acme/shop.git"
	switch s := strings.TrimSpace(remote); {
	case s == "":
		return "required, " + example
	case strings.ContainsAny(s, "?;#"):
		return "a remote URL with a query (?…), parameters (;…) or a fragment (#…) is not read: send " + example
	case len(s) > 2048:
		return "longer than 2048 bytes; send " + example
	}
	return "not read as a remote on a forge (a local path or a host without a dot names no shared repository); send " + example
}
