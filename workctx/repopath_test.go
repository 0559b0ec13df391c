package workctx

import (
	"strings"
	"testing"
)

// TestNormalizeRepoDropsPathCredentials: a token pasted into a remote's
// path used to be stored with the repository's name. GitHub-like forges
// keep owner/repo; GitLab's nested groups are kept whole, up to its "-"
// segment or a segment that looks like a credential.
func TestNormalizeRepoDropsPathCredentials(t *testing.T) {
	for in, want := range map[string]string{
		"ssh://git@github.com:22/acme/shop/ghp_u8jzPDE0igxld6gncfBAepfjbd0kh8oool8d": "github.com/acme/shop",
		"https://github.com/acme/shop/ghp_u8jzpde0igxld6gncfbaepfjbd0kh8oool8d":      "github.com/acme/shop",
		"https://github.com/acme/shop/tree/main/src":                                 "github.com/acme/shop",
		"https://github.com/acme/shop.git/x":                                         "github.com/acme/shop",
		"https://bitbucket.org/acme/shop/src/main":                                   "bitbucket.org/acme/shop",
		"https://gitlab.com/acme/platform/sub/app.git":                               "gitlab.com/acme/platform/sub/app",
		"https://gitlab.com/acme/platform/sub/app/-/merge_requests/1":                "gitlab.com/acme/platform/sub/app",
		"https://gitlab.com/acme/app/glpat-AbCdEfGhIjKlMnOpQrSt":                     "gitlab.com/acme/app",
		"https://git.example.com/g/sub/app/0123456789abcdef0123456789abcdef01234567": "git.example.com/g/sub/app",
		"https://git.example.com/g/app/Zk3QmP9xL2vT8rW4yB6nC1dH5":                    "git.example.com/g/app",
		"https://git.example.com/g/app/AKIAIOSFODNN7EXAMPLE":                         "git.example.com/g/app",
		"https://git.example.com/ghp_u8jzpde0igxld6gncfbaepfjbd0kh8oool8d/app":       "",
		// Long names that are names stay.
		"https://git.example.com/platform-team/payments-service-backend-2024": "git.example.com/platform-team/payments-service-backend-2024",
		"https://git.example.com/asia-pacific/region-service-deployments":     "git.example.com/asia-pacific/region-service-deployments",
	} {
		got := NormalizeRepo(in)
		if got != want {
			t.Errorf("NormalizeRepo(%q) = %q, want %q", in, got, want)
		}
		if NormalizeRepo(got) != got {
			t.Errorf("NormalizeRepo(%q) = %q does not read back as itself", in, got)
		}
	}
}

// TestRepoProblem: a remote that reads as none is told why, without the
// URL (it may hold a credential) and not as a missing field.
func TestRepoProblem(t *testing.T) {
	for in, want := range map[string]string{
		"":                                     "required",
		"git@github.com:acme/shop.git?x=ghp_1": "a query (?…), parameters (;…) or a fragment (#…)",
		"https://github.com/acme/shop;ghp_1":   "a query (?…), parameters (;…) or a fragment (#…)",
		"/home/alice/src/shop":                 "not read as a remote",
	} {
		got := RepoProblem(in)
		if !strings.Contains(got, want) || (in != "" && strings.Contains(got, in)) || strings.Contains(got, "ghp_1") {
			t.Errorf("RepoProblem(%q) = %q, want it to say %q without echoing the URL", in, got, want)
		}
	}
}
