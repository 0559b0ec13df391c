package doccheck

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCommentsCiteDocumentsInTheRepository applies the rule in the package
// doc to every .go file of the repository.
func TestCommentsCiteDocumentsInTheRepository(t *testing.T) {
	root := repoRoot(t)
	docs := map[string]*doc{} // cleaned path from the root -> headings; nil: missing
	var files int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			// The go tool's own rule for what is not part of the build.
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		files++
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, g := range f.Comments {
			text, lines := groupText(fset, g)
			for _, c := range citations(text, lines) {
				problem := check(root, filepath.Dir(rel), c, docs)
				if problem == "" {
					continue
				}
				t.Errorf("%s:%d: %s", rel, c.line, problem)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked %d .go files under %s; the walk is not seeing the repository", files, root)
	}
}

// repoRoot is the nearest directory above the test holding go.mod.
func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = up
	}
}

// groupText is a comment group's text with its markers removed, one line
// per source line, and the source line number of each.
func groupText(fset *token.FileSet, g *ast.CommentGroup) (string, []int) {
	var b strings.Builder
	var lines []int
	for _, c := range g.List {
		line := fset.Position(c.Pos()).Line
		text := strings.TrimPrefix(c.Text, "//")
		if strings.HasPrefix(c.Text, "/*") {
			text = strings.TrimSuffix(strings.TrimPrefix(c.Text, "/*"), "*/")
		}
		for i, l := range strings.Split(text, "\n") {
			if len(lines) > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(l)
			lines = append(lines, line+i)
		}
	}
	return b.String(), lines
}

// citation is one cited document with the sections and the heading cited
// right after it.
type citation struct {
	line     int
	path     string
	sections []string // "5.3"
	heading  string   // a quoted heading, "" when none
}

var (
	urlRe     = regexp.MustCompile(`https?://\S+`)
	pathRe    = regexp.MustCompile(`(?:\.\.?/)*[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b`)
	sectionRe = regexp.MustCompile(`^[\s,;]*(?:and\s+)?§\s*(\d+(?:\.\d+)*)`)
	quotedRe  = regexp.MustCompile(`^[\s,;:]*"([^"]+)"`)
)

// citations finds the documents text cites; lines[i] is the source line of
// text's line i.
func citations(text string, lines []int) []citation {
	// Blank web addresses out, keeping offsets, so that their paths are not
	// taken for the repository's.
	text = urlRe.ReplaceAllStringFunc(text, func(u string) string { return strings.Repeat(" ", len(u)) })
	var out []citation
	for _, m := range pathRe.FindAllStringIndex(text, -1) {
		c := citation{line: lines[strings.Count(text[:m[0]], "\n")], path: text[m[0]:m[1]]}
		rest := text[m[1]:]
		if q := quotedRe.FindStringSubmatch(rest); q != nil {
			c.heading = strings.Join(strings.Fields(q[1]), " ") // it may wrap
		}
		for {
			s := sectionRe.FindStringSubmatchIndex(rest)
			if s == nil {
				break
			}
			c.sections = append(c.sections, rest[s[2]:s[3]])
			rest = rest[s[1]:]
		}
		out = append(out, c)
	}
	return out
}

// doc is what a citation can name in a Markdown file.
type doc struct {
	numbers  map[string]bool // "5", "5.3"
	headings map[string]bool // lower-cased heading text, with and without its number
}

var headingNumberRe = regexp.MustCompile(`^(\d+(?:\.\d+)*)\.?\s+`)

// check says what is wrong with c, cited from directory dir (both relative
// to root), or "" when nothing is.
func check(root, dir string, c citation, docs map[string]*doc) string {
	var d *doc
	for _, p := range []string{c.path, filepath.Join(dir, c.path)} {
		p = filepath.Clean(p)
		if strings.HasPrefix(p, "..") {
			continue // outside the repository
		}
		if _, seen := docs[p]; !seen {
			docs[p] = readDoc(filepath.Join(root, p))
		}
		if d = docs[p]; d != nil {
			break
		}
	}
	if d == nil {
		return "cites " + c.path + ", which is not in the repository (cite a file that is, or say the fact inline)"
	}
	for _, s := range c.sections {
		if !d.numbers[s] {
			return "cites " + c.path + " §" + s + ", which has no such section"
		}
	}
	if c.heading != "" && !d.headings[strings.ToLower(c.heading)] {
		return "cites " + c.path + ", \"" + c.heading + "\", which has no such heading"
	}
	return ""
}

// readDoc reads the headings of the Markdown file at path; nil when there
// is no such file.
func readDoc(path string) *doc {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	d := &doc{numbers: map[string]bool{}, headings: map[string]bool{}}
	fenced := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		d.headings[strings.ToLower(text)] = true
		if m := headingNumberRe.FindStringSubmatch(text); m != nil {
			d.numbers[m[1]] = true
			d.headings[strings.ToLower(text[len(m[0]):])] = true
		}
	}
	return d
}

// TestCitations pins how citations are read from a comment.
func TestCitations(t *testing.T) {
	text := "See docs/wire-formats.md §5.3, §2 and\n" +
		"https://example.com/spec/api.md, then ../README.md,\n" +
		"\"Some heading\" and docs/architecture.md, \"The translation\n hub\"; not foo.mdx."
	got := citations(text, []int{10, 11, 12, 13})
	want := []citation{
		{line: 10, path: "docs/wire-formats.md", sections: []string{"5.3", "2"}},
		{line: 11, path: "../README.md", heading: "Some heading"},
		{line: 12, path: "docs/architecture.md", heading: "The translation hub"},
	}
	if len(got) != len(want) {
		t.Fatalf("citations = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.line != w.line || g.path != w.path || g.heading != w.heading || !slices.Equal(g.sections, w.sections) {
			t.Errorf("citation %d = %+v, want %+v", i, g, w)
		}
	}
}

// TestCheck pins the resolution rule against this repository's own files.
func TestCheck(t *testing.T) {
	root := repoRoot(t)
	docs := map[string]*doc{}
	for _, tc := range []struct {
		dir  string
		c    citation
		fail bool
	}{
		{"handlers", citation{path: "docs/wire-formats.md", sections: []string{"5.6"}}, false},
		{"handlers", citation{path: "docs/wire-formats.md", sections: []string{"1.3"}}, true},
		{"handlers", citation{path: "../README.md"}, false},
		{"handlers", citation{path: "spec/gemini-api.md"}, true},
		{"handlers", citation{path: "../../outside.md"}, true},
		{"", citation{path: "docs/architecture.md", heading: "The translation hub"}, true},
	} {
		if got := check(root, tc.dir, tc.c, docs); (got != "") != tc.fail {
			t.Errorf("check(%s, %+v) = %q, want failure %v", tc.dir, tc.c, got, tc.fail)
		}
	}
}
