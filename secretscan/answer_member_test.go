package secretscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// TestAnswerMemberScansOnlyIt: with a member named, a Responses answer's
// echo of its request (instructions, tools, metadata) is not scanned,
// whatever it holds, and a secret in the member is found at its full
// path and redacted; the rest of the body keeps its bytes.
func TestAnswerMemberScansOnlyIt(t *testing.T) {
	rs := rules(t)
	creds := secrettest.Corpus(2)
	echoed, written := creds[0].Text, creds[1].Text
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	body := []byte(`{"id":"resp_1","instructions":` + quote("use "+echoed) +
		`,"metadata":{` + quote(echoed) + `:"x"},"output":[{"type":"message","content":[{"type":"output_text","text":` +
		quote("here: "+written) + `}]}],"tools":[{"type":"function","description":` + quote(echoed) + `}],"usage":null}`)
	fw := &Firewall{rules: rs}
	for _, action := range []Action{Log, Redact} {
		out, dets := fw.RedactAnswerMember(action, body, "output", NewPlaceholders(10, 100).For("s"))
		if len(dets) != 1 || dets[0].Location.Path != "output[0].content[0].text" {
			t.Fatalf("%s: detections %+v, want one at output[0].content[0].text", action, dets)
		}
		if action == Log {
			if string(out) != string(body) {
				t.Fatalf("log changed the body")
			}
			continue
		}
		inner := func(s string) string { return strings.Trim(quote(s), `"`) }
		if !json.Valid(out) || strings.Contains(string(out), inner(written)) || strings.Count(string(out), inner(echoed)) != 3 {
			t.Fatalf("redact: %s", out)
		}
	}
	// Without a member the whole answer is scanned, as before.
	if dets, _ := rs.ScanBody(body); len(dets) < 4 {
		t.Fatalf("whole body: %d detections, want the echo's too", len(dets))
	}
	// A malformed skipped member is still an error, not a scan of half.
	if _, err := rs.scanBody([]byte(`{"instructions":[1,"output":[]}`), "output"); err == nil {
		t.Fatal("malformed body scanned")
	}
}
