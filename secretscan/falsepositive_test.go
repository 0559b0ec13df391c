package secretscan

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestFalsePositivesOnGoSources scans the Go distribution's own sources
// (bounded; test data, vendored code and crypto test vectors included, as
// an agent would read them) and holds the share of files with any finding
// under the rate docs/secret-firewall.md states.
func TestFalsePositivesOnGoSources(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 8 MB of Go sources")
	}
	const budget = 8 << 20
	const maxRate = 0.005
	rs := rules(t)
	var files, flagged, read int
	byRule := map[string]int{}
	root := eachGoSource(t, budget, func(_ string, src string) {
		read += len(src)
		files++
		if hits := rs.Scan(src); len(hits) > 0 {
			flagged++
			for _, h := range hits {
				byRule[h.Rule]++
			}
		}
	})
	if files < 100 {
		t.Fatalf("read only %d files under %s", files, root)
	}
	rate := float64(flagged) / float64(files)
	var rules []string
	for r, n := range byRule {
		rules = append(rules, r+"="+strconv.Itoa(n))
	}
	sort.Strings(rules)
	t.Logf("%d files, %d MB: %d with a finding (%.2f%%); findings by rule: %s", files, read>>20, flagged, 100*rate, strings.Join(rules, " "))
	if rate > maxRate {
		t.Fatalf("false-positive rate %.2f%% over the stated %.0f%%", 100*rate, 100*maxRate)
	}
}

// eachGoSource calls fn with the Go distribution's source files, in
// walk order, until budget bytes have been read, and returns the root.
func eachGoSource(t *testing.T, budget int, fn func(path, src string)) string {
	t.Helper()
	root := filepath.Join(secrettest.GoRoot(t), "src")
	read := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || read >= budget {
			return fs.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		read += len(b)
		fn(path, string(b))
		return nil
	})
	if err != nil && err != fs.SkipDir {
		t.Fatal(err)
	}
	return root
}
