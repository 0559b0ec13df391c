package workctx

import (
	"net/http"
	"strings"
	"testing"
)

func TestNormalizeRepo(t *testing.T) {
	for in, want := range map[string]string{
		"https://bot:ghp_SECRET@GitHub.com/Acme/Shop.git":  "github.com/acme/shop",
		"git@github.com:acme/shop.git":                     "github.com/acme/shop",
		"ssh://git@gitlab.example.com:2222/g/sub/app.git":  "gitlab.example.com/g/sub/app",
		"https://gitlab.example.com/g/app?private_token=x": "gitlab.example.com/g/app",
		"github.com/acme/shop":                             "github.com/acme/shop",
		"/home/alice/src/shop":                             "",
		"file:///srv/git/shop.git":                         "",
		"C:\\src\\shop":                                    "",
		"acme/shop":                                        "",
		"https://github.com/":                              "",
		"0.0/.Git":                                         "",
		"git.example.com/g/App.GIT":                        "git.example.com/g/app",
		"git.example.com/g/app.git.git":                    "git.example.com/g/app",
		"gitlab.example.com/g/app.git/-/tree/main":         "gitlab.example.com/g/app",
		// A repository in camel case with a digit is no token: its
		// ".git" form names it, as it always did.
		"https://github.com/Acme/AzureFunctionsV2Template.git":    "github.com/acme/azurefunctionsv2template",
		"git@gitlab.example.com:Grp/AzureFunctionsV2Template.git": "gitlab.example.com/grp/azurefunctionsv2template",
		// Tokens a cut ".git" uncovers are cut too.
		"https://h.example.com/a/0123456789abcdef0123456789abcdef.git": "h.example.com/a",
		"https://h.example.com/a/AKIAABCDEFGHIJKLMNOP.git":             "h.example.com/a",
		"h.example.com/a/b/...git":                                     "h.example.com/a",
	} {
		if got := NormalizeRepo(in); got != want {
			t.Errorf("NormalizeRepo(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzNormalizeRepo(f *testing.F) {
	for _, s := range []string{"https://u:p@h.io/a/b.git", "git@h:a/b", "ssh://h:22/x", "h.io/a"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := NormalizeRepo(s)
		if got == "" {
			return
		}
		if strings.ContainsAny(got, "@:?#% \\") || len(got) > maxField || NormalizeRepo(got) != got {
			t.Fatalf("NormalizeRepo(%q) = %q", s, got)
		}
		// No segment of the name is a token by the rules that read no case.
		for _, seg := range strings.Split(got, "/") {
			if tokenLike(seg, false) {
				t.Fatalf("NormalizeRepo(%q) = %q keeps a token-like %q", s, got, seg)
			}
		}
	})
}

func TestScrubHeader(t *testing.T) {
	h := http.Header{}
	h.Set(RepoHeader, "https://ci:glpat-SECRET@gitlab.example.com/g/app.git")
	ScrubHeader(h)
	if got := h.Get(RepoHeader); got != "gitlab.example.com/g/app" {
		t.Errorf("scrubbed to %q", got)
	}
	h.Set(RepoHeader, "/home/alice/secret-project")
	ScrubHeader(h)
	if _, ok := h[RepoHeader]; ok {
		t.Errorf("a local path kept: %v", h)
	}
	ScrubHeader(h) // none: nothing to do
}

// TestNormalizeRepoCostsItsLengthOnce: a header anyone may send before
// signing in, made of ".git" or of segments that cut to nothing, is
// normalized in one pass, not one pass per ".git" (which cost 1.2 ms and
// 1,024 allocations for 2 KB).
func TestNormalizeRepoCostsItsLengthOnce(t *testing.T) {
	for _, s := range []string{
		"h.io/a" + strings.Repeat(".git", 510),
		"h.io/x" + strings.Repeat(".git/..git", 200),
		"h.io/x" + strings.Repeat("/-.git", 300),
	} {
		if n := testing.AllocsPerRun(20, func() { NormalizeRepo(s) }); n > 8 {
			t.Errorf("NormalizeRepo(%.30q…): %.0f allocations", s, n)
		}
	}
}
