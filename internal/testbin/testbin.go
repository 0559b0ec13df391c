// Package testbin gives tests the path of a built ./cmd/caddy binary. The
// test command builds it once and exports MODELGATE_TEST_BINARY; a test run
// without it builds its own copy once per test process.
package testbin

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

var (
	once     sync.Once
	built    string
	buildErr error
)

// Path returns the binary's path, building it if needed; it fails the test
// when the build fails.
func Path(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("MODELGATE_TEST_BINARY"); p != "" {
		return p
	}
	once.Do(func() {
		_, file, _, _ := runtime.Caller(0)
		root := filepath.Join(filepath.Dir(file), "..", "..")
		dir, err := os.MkdirTemp("", "modelgate-bin-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "caddy")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/caddy")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildFailure{out: string(out), err: err}
		}
	})
	if buildErr != nil {
		t.Fatalf("building ./cmd/caddy: %v", buildErr)
	}
	return built
}

type buildFailure struct {
	out string
	err error
}

func (b *buildFailure) Error() string { return b.err.Error() + "\n" + b.out }
