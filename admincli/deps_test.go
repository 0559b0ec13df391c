package admincli

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLinksNoDatabase: the CLI reads dollar amounts with money, a leaf;
// importing the ledger for that again would link the PostgreSQL and
// SQLite drivers into everything that builds the CLI.
func TestLinksNoDatabase(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list the imports with")
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p == "github.com/modelgate/modelgate/ledger" || strings.Contains(p, "pgx") || strings.Contains(p, "sqlite") {
			t.Errorf("admincli links %s", p)
		}
	}
}
