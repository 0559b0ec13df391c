package caddymodule

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestBuildInfoNamesModelgateVersion: the main module's (devel) and an
// xcaddy build's zero pseudo-version become Modelgate's version; a real
// module version and other modules are left as Go recorded them.
func TestBuildInfoNamesModelgateVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.8", Path: ModulePath + "/cmd/caddy",
		Main: debug.Module{Path: ModulePath, Version: "(devel)"},
		Deps: []*debug.Module{{Path: "github.com/caddyserver/caddy/v2", Version: "v2.11.9", Sum: "h1:x"}}}
	out := buildInfo(bi, "v9.9.9")
	if !strings.Contains(out, "mod\t"+ModulePath+"\tv9.9.9") || strings.Contains(out, "(devel)") ||
		!strings.Contains(out, "dep\tgithub.com/caddyserver/caddy/v2\tv2.11.9\th1:x") {
		t.Errorf("main module build:\n%s", out)
	}
	if bi.Main.Version != "(devel)" {
		t.Error("buildInfo changed the build information it was given")
	}
	xc := &debug.BuildInfo{Path: "caddy", Main: debug.Module{Path: "caddy", Version: "(devel)"},
		Deps: []*debug.Module{{Path: ModulePath, Version: "v0.0.0-00010101000000-000000000000", Replace: &debug.Module{Path: "/src/modelgate"}}}}
	if out := buildInfo(xc, "v9.9.9"); !strings.Contains(out, "dep\t"+ModulePath+"\tv9.9.9") || strings.Contains(out, "00010101") ||
		!strings.Contains(out, "mod\tcaddy\t(devel)") {
		t.Errorf("xcaddy build:\n%s", out)
	}
	tagged := &debug.BuildInfo{Path: "caddy", Main: debug.Module{Path: "caddy"}, Deps: []*debug.Module{{Path: ModulePath, Version: "v0.2.0", Sum: "h1:y"}}}
	if out := buildInfo(tagged, "v9.9.9"); !strings.Contains(out, "dep\t"+ModulePath+"\tv0.2.0\th1:y") {
		t.Errorf("published version:\n%s", out)
	}
}
