//go:build unix

package agenthook_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelgate/modelgate/agenthook"
)

// TestInstallRefusesWhatIsNotASettingsFile: a settings path that is a
// FIFO used to hang install, a link to /dev/zero or a huge file to eat
// memory, and a dangling link was silently replaced by a new file.
func TestInstallRefusesWhatIsNotASettingsFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(64 << 20); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	dangling := filepath.Join(dir, "dangling.json")
	if err := os.Symlink(filepath.Join(dir, "nowhere", "settings.json"), dangling); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{fifo, "not a regular file"},
		{zero, "not a regular file"},
		{huge, "more than a settings file can be"},
		{dangling, "does not exist"},
	} {
		for name, run := range map[string]func() error{
			"install":   func() error { _, err := agenthook.Install(tc.path, nil, ourCmd); return err },
			"uninstall": func() error { _, err := agenthook.Uninstall(tc.path, nil); return err },
		} {
			done := make(chan error, 1)
			go func() { done <- run() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) {
					t.Errorf("%s %s: %v, want an error naming the path and %q", name, filepath.Base(tc.path), err, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s %s hangs", name, filepath.Base(tc.path))
			}
		}
	}
	if fi, err := os.Lstat(dangling); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the dangling link was replaced: %v %v", fi, err)
	}
	if fi, err := os.Stat(huge); err != nil || fi.Size() != 64<<20 {
		t.Errorf("the huge file was touched: %v %v", fi, err)
	}
}
