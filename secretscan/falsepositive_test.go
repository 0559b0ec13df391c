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
	root := filepath.Join(secrettest.GoRoot(t), "src")
	var files, flagged, read int
	byRule := map[string]int{}
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
		files++
		if hits := rs.Scan(string(b)); len(hits) > 0 {
			flagged++
			for _, h := range hits {
				byRule[h.Rule]++
			}
		}
		return nil
	})
	if err != nil && err != fs.SkipDir {
		t.Fatal(err)
	}
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
