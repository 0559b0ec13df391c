package integration

// Running a Node script that drives the gateway with a client library
// installed by scripts/node-sdks.sh or scripts/ai-sdk.sh.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// installScript copies testdata/name into dir, where the packages the
// script imports are installed, and returns its path there.
func installScript(t *testing.T, dir, name string) string {
	t.Helper()
	script, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "modelgate-"+strings.TrimSuffix(name, ".mjs")+"-test.mjs")
	if err := os.WriteFile(run, script, 0o600); err != nil {
		t.Fatal(err)
	}
	return run
}

// runNode runs a script with node in dir, its environment PATH, a fresh
// HOME and env, and returns what it printed, trimmed; a failure fails t
// with both outputs.
func runNode(t *testing.T, dir, node, script string, env ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	return bytes.TrimSpace(stdout.Bytes())
}
