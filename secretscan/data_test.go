package secretscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestScreenDataFreeForm: in free-form data (an MCP tool call's
// arguments) a member named like a format's id or signature is text: a
// credential in it is found and redacted, and the value stays valid JSON
// with its other members as they were.
func TestScreenDataFreeForm(t *testing.T) {
	fw, err := New(10, 10)
	if err != nil {
		t.Fatal(err)
	}
	var pat string
	for _, c := range secrettest.Corpus(4) {
		if c.Kind == "github-pat" {
			pat = c.Value
		}
	}
	for _, member := range []string{"id", "signature", "call_id", "type", "token"} {
		args := `{"env":"prod","` + member + `":"` + pat + `","n":3}`
		v, err := fw.ScreenData(Redact, []byte(args), fw.Names("t"))
		if err != nil || len(v.Detections) != 1 || strings.Contains(string(v.Body), pat) ||
			!strings.HasPrefix(string(v.Body), `{"env":"prod","`+member+`":"[REDACTED:github-pat:`) || !strings.HasSuffix(string(v.Body), `,"n":3}`) {
			t.Fatalf("%s: %s %+v %v", member, v.Body, v.Detections, err)
		}
		if p := v.Detections[0].Location.Path; !strings.HasPrefix(p, "arguments.") || strings.Contains(p, pat) {
			t.Fatalf("%s: location %q", member, v.Detections[0].Location.Path)
		}
		b, _ := fw.ScreenData(Block, []byte(args), nil)
		if !b.Blocked || string(b.Body) != args {
			t.Fatalf("%s: block %+v", member, b)
		}
	}
	clean := []byte(`{"env":"prod"}`)
	if v, err := fw.ScreenData(Redact, clean, nil); err != nil || len(v.Detections) != 0 || &v.Body[0] != &clean[0] {
		t.Fatalf("clean arguments: %s %v", v.Body, err)
	}
	for _, bad := range []string{`{"a":`, `{}, "id":"` + pat + `"`} {
		if _, err := fw.ScreenData(Redact, []byte(bad), nil); err == nil {
			t.Fatalf("broken arguments %s screened", bad)
		}
	}
}

// TestSessionIDStandIn (H10-6): a session id that is a credential becomes
// a stand-in, the same for the same id and without the value; any other
// id is kept.
func TestSessionIDStandIn(t *testing.T) {
	fw, err := New(10, 10)
	if err != nil {
		t.Fatal(err)
	}
	pat := secrettest.Corpus(4)[8].Value
	got, d := fw.SessionID(pat)
	again, _ := fw.SessionID(pat)
	if d == nil || d.Rule != "github-pat" || strings.Contains(got, pat) || !strings.HasPrefix(got, "redacted-github-pat-") || got != again {
		t.Fatalf("%q %+v", got, d)
	}
	for _, id := range []string{"", "s1", "0b6f6c1e-6a59-4a0e-9a4e-1d5f8c2b7e21", "claude-session-2026-11-29"} {
		if got, d := fw.SessionID(id); got != id || d != nil {
			t.Errorf("%q: %q %+v", id, got, d)
		}
	}
}

// FuzzScreenData: any arguments the screen accepts come back as one JSON
// value; arguments that are not one are refused, never wrapped.
func FuzzScreenData(f *testing.F) {
	f.Add([]byte(`{"id":"ghp_PwpkPG2Iiq1J9MRFa6AnO8wr1l5KAgn48GBL","n":[1,{"k":"v"}]}`))
	f.Add([]byte(`{}, "id":"x"`))
	f.Add([]byte(`"AKIAIOSFODNN7EXAMPLE"`))
	fw, err := New(10, 10)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := fw.ScreenData(Redact, data, fw.Names("f"))
		if err != nil {
			if json.Valid(data) {
				t.Fatalf("valid %q refused: %v", data, err)
			}
			return
		}
		if !json.Valid(v.Body) {
			t.Fatalf("%q screened to %q", data, v.Body)
		}
	})
}

// BenchmarkSessionID is the session id screen of a request with an
// ordinary session id (Claude Code's UUID), the same one turn after turn.
func BenchmarkSessionID(b *testing.B) {
	fw, err := New(10, 10)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, d := fw.SessionID("0b6f6c1e-6a59-4a0e-9a4e-1d5f8c2b7e21"); d != nil {
			b.Fatal(d)
		}
	}
}
