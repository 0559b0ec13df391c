package apierror

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/modelgate/modelgate/"

// TestLeaf: apierror imports nothing of the gateway, and the packages that
// refuse callers (policy, identity) reach it without importing the
// translators in providers.
func TestLeaf(t *testing.T) {
	imports := func(dir string) []string {
		p, err := build.ImportDir(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		return p.Imports
	}
	for _, imp := range imports(".") {
		if strings.HasPrefix(imp, module) {
			t.Errorf("apierror imports %s: a leaf imports nothing of the gateway", imp)
		}
	}
	for _, dir := range []string{"../policy", "../identity"} {
		if slices.Contains(imports(dir), module+"providers") {
			t.Errorf("%s imports providers: its errors are apierror's", dir)
		}
	}
}

// TestFamilyIsItsOwnAudience: a Family can be written for directly, as
// identity writes Anthropic's shape for the dashboard.
func TestFamilyIsItsOwnAudience(t *testing.T) {
	e := &Error{Status: 401, Message: "no"}
	if got := string(e.Body(Anthropic)); got != `{"type":"error","error":{"type":"authentication_error","message":"no"}}` {
		t.Errorf("Anthropic body %s", got)
	}
	if got := string(e.AppendStreamError(nil, Bedrock)); got != "event: modelStreamErrorException\ndata: {\"message\":\"no\"}\n\n" {
		t.Errorf("Bedrock stream error %q", got)
	}
}
