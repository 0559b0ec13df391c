package secretscan

import (
	"reflect"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// unfiltered is the rule set with the assignment-shape and needed-literal
// prefilters off: every keyword window goes to the regex, as gitleaks
// would run it. The prefilters must never change what a scan finds.
func unfiltered(t testing.TB) *Rules {
	t.Helper()
	rs, err := Compile()
	if err != nil {
		t.Fatal(err)
	}
	shaped, needing, following := 0, 0, 0
	for i := range rs.rules {
		if rs.rules[i].assign != nil {
			shaped++
		}
		if len(rs.rules[i].needs) > 0 {
			needing++
		}
		if rs.rules[i].follow != nil {
			following++
		}
		rs.rules[i].assign, rs.rules[i].needs, rs.rules[i].follow = nil, nil, nil
	}
	if shaped < 80 || needing < 150 || following < 20 {
		t.Fatalf("prefilters on %d (assignment shape), %d (needed literals) and %d (keyword-led) rules, want at least 80, 150 and 20", shaped, needing, following)
	}
	return rs
}

func samePrefiltered(t *testing.T, filtered, plain *Rules, name, text string) {
	t.Helper()
	if got, want := filtered.Scan(text), plain.Scan(text); !reflect.DeepEqual(got, want) {
		t.Errorf("%s: prefiltered scan found %v, the plain rules %v", name, got, want)
	}
}

// TestPrefiltersKeepEveryMatch scans the credential corpus in the shapes
// an agent meets them (assignments, JSON, YAML, prose, a Kubernetes
// secret) and Go sources with and without the prefilters: the hits must
// be identical.
func TestPrefiltersKeepEveryMatch(t *testing.T) {
	rs, plain := rules(t), unfiltered(t)
	shapes := []string{
		"%s",
		"export API_KEY=%s\n",
		"config.token = \"%s\"",
		`{"secret_key": "%s", "x": 1}`,
		"password:\n  %s\n",
		"here is my key, %s, please keep it",
		"apiVersion: v1\nkind: Secret\ndata:\n  token: %s\n",
		"curl -H \"Authorization: Bearer %s\" https://api.example.com",
	}
	for seed := uint64(1); seed <= 20; seed++ {
		for _, c := range secrettest.Corpus(seed) {
			for _, shape := range shapes {
				samePrefiltered(t, rs, plain, c.Kind, strings.ReplaceAll(shape, "%s", c.Text))
			}
		}
	}
	samePrefiltered(t, rs, plain, "prompt", benchPrompt)
	eachGoSource(t, 2<<20, func(path, src string) {
		samePrefiltered(t, rs, plain, path, src)
	})
}

// FuzzPrefiltersKeepEveryMatch holds the prefiltered scan to the plain one
// on any text.
func FuzzPrefiltersKeepEveryMatch(f *testing.F) {
	for _, c := range secrettest.Corpus(1) {
		f.Add(c.Text)
		f.Add("token := " + c.Text)
	}
	f.Add(benchPrompt)
	f.Add("kind: Secret\ndata:\n  password: c2VjcmV0cGFzc3dvcmQ=\n")
	f.Add("\u212Aind: Secret\ndata:\n  api_\u212Aey: c2VjcmV0cGFzc3dvcmQ=\n")
	rs, plain := rules(f), unfiltered(f)
	f.Fuzz(func(t *testing.T, text string) {
		samePrefiltered(t, rs, plain, "fuzz", text)
	})
}

func TestTokenByteMasks(t *testing.T) {
	for c := range 256 {
		b := byte(c)
		want := 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
			b == '_' || b == '-' || b == '+' || b == '/'
		if tokenByte(b) != want {
			t.Errorf("tokenByte(%q) = %v, want %v", b, !want, want)
		}
	}
}
