package batch

import (
	"bytes"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// TestUploadLineCreateRefusesIsScreened: an uploaded line that names a
// model but that a batch's create would refuse (stream or background
// true) is still kept in the file, so it is stored screened too.
func TestUploadLineCreateRefusesIsScreened(t *testing.T) {
	var models []string
	s := &Service{o: Options{Screen: func(_ *policy.Identity, model string, body []byte) ([]byte, string) {
		models = append(models, model)
		return bytes.ReplaceAll(body, []byte("SECRET"), []byte("[R]")), ""
	}}}
	content := []byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"m","stream":true,"messages":[{"role":"user","content":"SECRET"}]}}` + "\n" +
		`{"custom_id":"b","method":"POST","url":"/v1/responses","body":{"model":"r","background":true,"input":"SECRET"}}` + "\n")
	out, e := s.screenUpload(nil, content)
	if e != nil {
		t.Fatalf("refused: %v", e)
	}
	if strings.Contains(string(out), "SECRET") || strings.Count(string(out), "[R]") != 2 {
		t.Fatalf("stored %s", out)
	}
	if strings.Join(models, ",") != "m,r" {
		t.Fatalf("screened for models %v, want m,r", models)
	}
}
