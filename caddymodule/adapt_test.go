package caddymodule

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/caddyserver/caddy/v2/caddytest"
)

// TestCaddyfileAdapt checks each testdata/caddyfile_adapt/*.caddyfiletest:
// a Caddyfile, a line of dashes, then the JSON it must adapt to. It pins
// the directive order (auth → admin → gateway → respond) and that secrets
// stay placeholders.
func TestCaddyfileAdapt(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "caddyfile_adapt", "*.caddyfiletest"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no adapt tests found: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		caddyfile, want, ok := strings.Cut(string(data), "----------")
		if !ok {
			t.Fatalf("%s: no ---------- separator", f)
		}
		if !caddytest.CompareAdapt(t, f, caddyfile, "caddyfile", strings.TrimSpace(want)) {
			t.Errorf("%s: adapted JSON differs", f)
		}
	}
}
