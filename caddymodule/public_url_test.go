package caddymodule

import (
	"strings"
	"testing"
)

// public_url is the one base of the links the gateway posts;
// mcp_approvals public_url, its older name, sets it too, and the two must
// agree; a URL with a path or credentials is refused.
func TestPublicURL(t *testing.T) {
	a := &App{PublicURL: "https://gw.example/"}
	if err := a.provisionPublicURL(); err != nil || a.publicURL != "https://gw.example" {
		t.Errorf("public_url: %q %v", a.publicURL, err)
	}
	a = &App{MCPApprovals: &MCPApprovalsConfig{publicURL: "https://old.example"}}
	if err := a.provisionPublicURL(); err != nil || a.publicURL != "https://old.example" {
		t.Errorf("mcp_approvals public_url alone: %q %v", a.publicURL, err)
	}
	a = &App{PublicURL: "https://gw.example", MCPApprovals: &MCPApprovalsConfig{publicURL: "https://old.example"}}
	if err := a.provisionPublicURL(); err == nil || !strings.Contains(err.Error(), "differs") {
		t.Errorf("two public URLs: %v", err)
	}
	for _, bad := range []string{"gw.example", "https://gw.example/ui", "https://u:p@gw.example", "ftp://gw.example"} {
		if err := (&App{PublicURL: bad}).provisionPublicURL(); err == nil || !strings.Contains(err.Error(), "public_url") {
			t.Errorf("public_url %q: %v", bad, err)
		}
	}
	if err := (&App{}).provisionPublicURL(); err != nil {
		t.Errorf("no public_url: %v", err)
	}
}
