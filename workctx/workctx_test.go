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
