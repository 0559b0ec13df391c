package caddymodule

import (
	"os"
	"path/filepath"
	"testing"
)

// The instance name is made once and read back after a restart, so the
// restarted process releases its predecessor's budget lease rows.
func TestInstanceNameSurvivesRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "modelgate", "instance-id")
	first := instanceName(path)
	if first == "" {
		t.Fatal("no name")
	}
	if again := instanceName(path); again != first {
		t.Errorf("after a restart the name is %q, want %q", again, first)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("name file: %v %v", fi, err)
	}
}
