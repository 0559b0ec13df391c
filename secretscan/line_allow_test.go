package secretscan

import (
	"strings"
	"testing"
)

// TestLineAllowlistJudgesOnlyAWholeLine (review of the 4 KiB line cut): a
// line allowlist anchored at the line's start (^\s*#) allows a commented
// token, but a client that puts "# " exactly where the cut falls, 4 KiB
// before a token on one long line, does not have it allowed: a line cut
// short is judged by no line allowlist.
func TestLineAllowlistJudgesOnlyAWholeLine(t *testing.T) {
	rs, err := compileTOML(`
[[rules]]
id = "test-token"
regex = '''tok_[A-Za-z0-9]{20}'''
keywords = ["tok_"]
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''^\s*#''']
`)
	if err != nil {
		t.Fatal(err)
	}
	const token = "tok_AbCdEfGhIjKlMnOpQrSt"
	if hits := rs.Scan("# " + token); len(hits) != 0 {
		t.Errorf("a commented line: %v, want it allowed", hits)
	}
	if hits := rs.Scan("x = 1\n# " + token + "\ny = 2"); len(hits) != 0 {
		t.Errorf("a commented line among others: %v, want it allowed", hits)
	}
	placed := strings.Repeat("a", 1000) + "# " + strings.Repeat("b", maxLineReach-2) + token
	if hits := rs.Scan(placed); len(hits) != 1 {
		t.Errorf("'# ' placed at the cut, 4 KiB before the token on one line: %d hits, want 1", len(hits))
	}
	after := token + strings.Repeat("c", maxLineReach+10)
	if hits := rs.Scan("# " + after); len(hits) != 1 {
		t.Errorf("a commented line cut after the token: %d hits, want 1 (cut short, it is not judged)", len(hits))
	}
}
