package ledger

import (
	"strings"
	"testing"
)

// TestMigrationGapIsRefused: an empty slot in migrations() (a branch's
// migration numbered past the last, leaving a gap) is an error naming it,
// not a version recorded as applied that the migration later given that
// number would then never run under.
func TestMigrationGapIsRefused(t *testing.T) {
	steps := []string{1: "CREATE TABLE a (x INTEGER)", 3: "CREATE TABLE c (x INTEGER)"}
	err := checkMigrations(steps, nil)
	if err == nil || !strings.Contains(err.Error(), "migration 2 is empty") {
		t.Fatalf("a gap at 2: %v; want an error naming migration 2", err)
	}
	if err := checkMigrations(migrations(), migrationSteps()); err != nil {
		t.Fatalf("the shipped migrations: %v", err)
	}
}
