package batch

import (
	"bytes"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// FuzzScreenUpload: whatever the upload, screening it keeps its lines
// (one output line per input line), changes only lines the screener
// changed, and never panics.
func FuzzScreenUpload(f *testing.F) {
	f.Add([]byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"SECRET"}]}}` + "\n"))
	f.Add([]byte("{}\n\n{\"body\":{\"model\":\"m\"}}\r\n{\"body\":"))
	f.Add([]byte(`{"custom_id":"x","body":{"model":"m","input":"SECRET SECRET"}}`))
	s := &Service{o: Options{Screen: func(_ *policy.Identity, _ string, body []byte) ([]byte, string) {
		return bytes.ReplaceAll(body, []byte("SECRET"), []byte("[R]")), ""
	}}}
	f.Fuzz(func(t *testing.T, content []byte) {
		out, e := s.screenUpload(nil, content)
		if e != nil {
			t.Fatalf("refused: %v", e)
		}
		if bytes.Count(out, []byte{'\n'}) != bytes.Count(content, []byte{'\n'}) {
			t.Fatalf("lines %q -> %q", content, out)
		}
		if !bytes.Contains(content, []byte("SECRET")) && !bytes.Equal(out, content) {
			t.Fatalf("changed an upload with nothing to screen: %q -> %q", content, out)
		}
	})
}
