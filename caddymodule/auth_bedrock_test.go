package caddymodule

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

// TestAuthRefusesBedrockInBedrocksShape: Claude Code's Bedrock mode first
// calls Bedrock's control plane (GET /inference-profiles) through the AWS
// SDK without the gateway key; the 401 it gets, like a keyless call on the
// runtime's /model/… paths, is in Bedrock's error shape ({"message"} and
// x-amzn-ErrorType), as the gateway's other Bedrock answers are, not in
// OpenAI's. Other paths keep their own families.
func TestAuthRefusesBedrockInBedrocksShape(t *testing.T) {
	auth, err := policy.NewAuth([]policy.Key{{Secret: "sk-test-bedrock-key-1", ID: "k"}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Auth{auth: auth, adminPaths: policy.NewPathSet([]string{"/metrics"})}
	serve := func(method, path string) *httptest.ResponseRecorder {
		t.Helper()
		next := &recordingNext{}
		w := httptest.NewRecorder()
		if err := a.ServeHTTP(w, httptest.NewRequest(method, path, strings.NewReader("{}")), next); err != nil {
			t.Fatal(err)
		}
		if next.called {
			t.Fatalf("%s %s without a key reached the next handler", method, path)
		}
		return w
	}
	for _, c := range []struct{ method, path string }{
		{"GET", "/inference-profiles?type=SYSTEM_DEFINED&maxResults=1000"},
		{"GET", "/foundation-models"},
		{"POST", "/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/invoke-with-response-stream"},
	} {
		w := serve(c.method, c.path)
		var body map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s %s: body %q: %v", c.method, c.path, w.Body, err)
		}
		msg, _ := body["message"].(string)
		if w.Code != http.StatusUnauthorized || w.Header().Get("X-Amzn-Errortype") != "AccessDeniedException" ||
			len(body) != 1 || !strings.Contains(msg, "API key") {
			t.Errorf("%s %s without a key: %d %q x-amzn-ErrorType %q; want 401 {\"message\":…API key…} AccessDeniedException",
				c.method, c.path, w.Code, w.Body, w.Header().Get("X-Amzn-Errortype"))
		}
	}
	// Not Bedrock's: a look-alike path and the OpenAI and Anthropic paths.
	for path, want := range map[string]string{
		"/inference-profilesx": `"error":{"message"`,
		"/v1/chat/completions": `"error":{"message"`,
		"/v1/messages":         `"type":"error"`,
	} {
		w := serve("POST", path)
		if w.Code != http.StatusUnauthorized || w.Header().Get("X-Amzn-Errortype") != "" || !strings.Contains(w.Body.String(), want) {
			t.Errorf("POST %s without a key: %d %q; want 401 with %s", path, w.Code, w.Body, want)
		}
	}
}
