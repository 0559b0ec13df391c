package secrettest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// GoRoot is `go env GOROOT`: the Go distribution whose sources are the
// tests' corpus of ordinary code.
func GoRoot(tb testing.TB) string {
	tb.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		tb.Skipf("no go command to find the Go sources: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// GoSource is n bytes of the Go distribution's own sources, ordinary code
// such as agents' prompts and tool results are made of.
func GoSource(tb testing.TB, n int) string {
	tb.Helper()
	root := GoRoot(tb)
	var buf []byte
	for _, dir := range []string{"net/http", "encoding/json", "go/parser", "fmt", "strings"} {
		files, _ := filepath.Glob(filepath.Join(root, "src", dir, "*.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			buf = append(buf, b...)
			if len(buf) >= n {
				return string(buf[:n])
			}
		}
	}
	tb.Fatalf("only %d bytes of Go sources under %s", len(buf), root)
	return ""
}
