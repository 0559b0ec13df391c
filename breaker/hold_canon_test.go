package breaker

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// reversed is v as JSON with every object's members in reverse order
// (encoding/json sorts them), as another client library may write them.
func reversed(t *testing.T, v any) []byte {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		slices.Reverse(keys)
		var b bytes.Buffer
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			name, _ := json.Marshal(k)
			b.Write(name)
			b.WriteByte(':')
			b.Write(reversed(t, x[k]))
		}
		b.WriteByte('}')
		return b.Bytes()
	case []any:
		var b bytes.Buffer
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(reversed(t, e))
		}
		b.WriteByte(']')
		return b.Bytes()
	}
	out, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHoldSurvivesReserialization (hostile pass 12, H12-4): the turn that
// paused a session, sent again under a new session id in another JSON
// serialization (spaced, members reordered, non-ASCII escaped), with
// or with whitespace added to its last tool result, is still the held
// conversation.
func TestHoldSurvivesReserialization(t *testing.T) {
	b, _, _ := newTestBreaker(t, nil)
	ctx := context.Background()
	rules := &ledger.BreakerRules{Action: ActionPause}
	c := newClaudeSession("refactor module é x2")
	var d Decision
	for range DefaultRepeat {
		d = b.Admit(ctx, turnOf(c.turn("Bash", map[string]any{"command": "go test ./parser"}, "FAIL parser\nexit status 1", true), rules))
	}
	if d.Refusal == nil {
		t.Fatal("the session was not paused")
	}
	tripping := c.body()
	var body map[string]any
	if err := json.Unmarshal(tripping, &body); err != nil {
		t.Fatal(err)
	}
	var spaced bytes.Buffer
	if err := json.Indent(&spaced, tripping, "", "  "); err != nil {
		t.Fatal(err)
	}
	reordered := reversed(t, body)
	msgs := body["messages"].([]any)
	last := msgs[len(msgs)-1].(map[string]any)["content"].([]any)[0].(map[string]any)
	last["content"] = last["content"].(string) + "  "
	tweaked, _ := json.Marshal(body)
	escaped := bytes.ReplaceAll(tripping, []byte("é"), []byte(`\u00e9`))
	for i, v := range []struct {
		name string
		body []byte
	}{{"spaced", spaced.Bytes()}, {"members reordered", reordered}, {"non-ASCII escaped", escaped},
		{"whitespace added to the last result", tweaked}} {
		if bytes.Equal(v.body, tripping) {
			t.Fatalf("%s: the same bytes", v.name)
		}
		if d := b.Admit(ctx, rotating(v.body, 40+i, rules)); d.Refusal == nil || d.Refusal.Status != 429 {
			t.Errorf("%s, under a new session id: served", v.name)
		}
	}
}

// FuzzEntryHash: any bytes hash without a panic, and a JSON entry
// hashes the same compact and indented.
func FuzzEntryHash(f *testing.F) {
	for _, s := range []string{`{"role":"user","content":"go"}`, `{"a":[1,"x\u00e9\n y",{"cache_control":{"type":"ephemeral"}}]}`, `"\ud83d\ude00"`, `[tru`, `{"a":`, `7`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		h := entryHash(raw)
		if !json.Valid(raw) {
			return
		}
		var compact, spaced bytes.Buffer
		if json.Compact(&compact, raw) != nil || json.Indent(&spaced, raw, " ", "\t") != nil {
			return
		}
		if entryHash(compact.Bytes()) != h || entryHash(spaced.Bytes()) != h {
			t.Fatalf("%q: compact or indented hashes apart", raw)
		}
	})
}

// BenchmarkEntryHash is the cost of naming a large first entry (a 20 KB
// system prompt of prose with line breaks) by its content.
func BenchmarkEntryHash(b *testing.B) {
	entry, _ := json.Marshal(map[string]any{"role": "system", "content": strings.Repeat("You are a careful coding agent.\nRead the files first. ", 360)})
	b.SetBytes(int64(len(entry)))
	b.ReportAllocs()
	for b.Loop() {
		entryHash(entry)
	}
}
