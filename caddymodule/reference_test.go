package caddymodule

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestConfigurationReferenceIsComplete keeps docs/configuration.md true to
// the code: every word the Caddyfile parsers accept, every models-file key
// the models parser knows and every environment variable the binary names
// must appear in it, as `word`. The lists are read from the source itself,
// so a new option fails this test until the reference documents it.
func TestConfigurationReferenceIsComplete(t *testing.T) {
	ref, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(ref)
	check := func(kind string, words []string) {
		t.Helper()
		if len(words) == 0 {
			t.Fatalf("found no %s in the source: the test no longer reads the code", kind)
		}
		for _, w := range words {
			if !strings.Contains(doc, "`"+w+"`") && !strings.Contains(doc, "`"+w+" ") {
				t.Errorf("docs/configuration.md does not document the %s `%s`", kind, w)
			}
		}
	}
	caddyfileWords, envs := sourceWords(t, ".")
	check("Caddyfile directive or option", caddyfileWords)
	check("environment variable", envs)
	_, modelEnvs := sourceWords(t, filepath.Join("..", "modellist"))
	check("environment variable", modelEnvs)
	check("models-file key", modelFileKeys(t))
	check("environment variable", constEnvs(t, filepath.Join("..", "agenthook")))
}

var envName = regexp.MustCompile(`^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$`)

func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

func lit(e ast.Expr) (string, bool) {
	b, ok := e.(*ast.BasicLit)
	if !ok || b.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(b.Value)
	return s, err == nil
}

// isDVal reports whether e is d.Val(): the Caddyfile token being parsed.
func isDVal(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Val"
}

func callName(c *ast.CallExpr) string {
	switch f := c.Fun.(type) {
	case *ast.SelectorExpr:
		return f.Sel.Name
	case *ast.Ident:
		return f.Name
	}
	return ""
}

// sourceWords reads the Caddyfile words and environment variables of a
// package's source. Caddyfile words: the names registered as directives
// and global options, the case labels of switches on d.Val() (or on opt,
// which holds it) and strings compared with d.Val(). Environment
// variables: literal arguments of Getenv and LookupEnv (any spelling), the
// defaults of flags named *-env, and the names in a list a range statement
// looks up one by one.
func sourceWords(t *testing.T, dir string) (words, envs []string) {
	t.Helper()
	add := func(list *[]string, s string) {
		if s != "" && !slices.Contains(*list, s) {
			*list = append(*list, s)
		}
	}
	for _, f := range parseDir(t, dir) {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SwitchStmt:
				tag := n.Tag
				if id, ok := tag.(*ast.Ident); !(ok && id.Name == "opt") && !isDVal(tag) {
					return true
				}
				for _, s := range n.Body.List {
					for _, e := range s.(*ast.CaseClause).List {
						if v, ok := lit(e); ok {
							add(&words, v)
						}
					}
				}
			case *ast.BinaryExpr:
				if n.Op != token.EQL && n.Op != token.NEQ {
					return true
				}
				for _, pair := range [2][2]ast.Expr{{n.X, n.Y}, {n.Y, n.X}} {
					if v, ok := lit(pair[1]); ok && isDVal(pair[0]) {
						add(&words, v)
					}
				}
			case *ast.CallExpr:
				name := callName(n)
				switch {
				case name == "RegisterHandlerDirective" || name == "RegisterGlobalOption":
					if v, ok := lit(n.Args[0]); ok {
						add(&words, v)
					}
				case strings.HasSuffix(strings.ToLower(name), "getenv") || strings.HasSuffix(strings.ToLower(name), "lookupenv"):
					if len(n.Args) == 1 {
						if v, ok := lit(n.Args[0]); ok {
							add(&envs, v)
						}
					}
				case len(n.Args) >= 2:
					if flag, ok := lit(n.Args[0]); ok && strings.HasSuffix(flag, "-env") {
						if v, ok := lit(n.Args[1]); ok {
							add(&envs, v)
						}
					}
				}
			case *ast.RangeStmt:
				looksUp := false
				ast.Inspect(n.Body, func(m ast.Node) bool {
					if c, ok := m.(*ast.CallExpr); ok && strings.HasSuffix(strings.ToLower(callName(c)), "getenv") {
						looksUp = true
					}
					return true
				})
				if cl, ok := n.X.(*ast.CompositeLit); ok && looksUp {
					for _, e := range cl.Elts {
						if v, ok := lit(e); ok && envName.MatchString(v) {
							add(&envs, v)
						}
					}
				}
			}
			return true
		})
	}
	return words, envs
}

// constEnvs are the values of a package's constants named *Env that name
// an environment variable (agenthook's DefaultWebhookEnv).
func constEnvs(t *testing.T, dir string) []string {
	var out []string
	for _, f := range parseDir(t, dir) {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, s := range g.Specs {
				vs := s.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) && strings.HasSuffix(name.Name, "Env") {
						if v, ok := lit(vs.Values[i]); ok && envName.MatchString(v) {
							out = append(out, v)
						}
					}
				}
			}
		}
	}
	return out
}

// modelFileKeys are the keys the models parser accepts: the string
// literals of its field-list functions (topFields, paramFields, …), which
// the parser checks every mapping against.
func modelFileKeys(t *testing.T) []string {
	var out []string
	for _, f := range parseDir(t, filepath.Join("..", "modellist")) {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !strings.HasSuffix(fn.Name.Name, "Fields") || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if b, ok := n.(*ast.BasicLit); ok {
					if v, ok := lit(b); ok && !slices.Contains(out, v) {
						out = append(out, v)
					}
				}
				return true
			})
		}
	}
	return out
}
