package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/policy"
)

func get(g *Gateway, id *policy.Identity, method, path string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if id != nil {
		req = req.WithContext(policy.WithIdentity(req.Context(), id))
	}
	rec := httptest.NewRecorder()
	if h, ok := g.Route(req); ok {
		h(rec, req)
	} else {
		rec.Code = -1 // passed to the next handler
	}
	return rec
}

// TestUnservedAPIPathsAre404: these used to pass to the next handler and
// end as Caddy's empty 200.
func TestUnservedAPIPathsAre404(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), nil)
	for _, tc := range []struct{ method, path, family string }{
		{"POST", "//v1/chat/completions", `"error":{"message"`},
		{"POST", "/v1/chat/completions/", `"error":{"message"`},
		{"GET", "/v1/nosuch", `"error":{"message"`},
		{"POST", "/v1/messages/batches", `"type":"error"`},
		{"POST", "/v1beta/models/m:predictLongRunning", `"status":"NOT_FOUND"`},
		{"GET", "/v1beta/files", `"status":"NOT_FOUND"`},
		{"POST", "/v1/responses/resp_1/nosuch", `"error":{"message"`},
		{"POST", "/v1/conversations/conv_1/nosuch", `"error":{"message"`},
		{"POST", "/embeddings/x", `"error":{"message"`},
		{"GET", "/v1", `"error":{"message"`},
	} {
		rec := get(g, alice, tc.method, tc.path)
		body := rec.Body.String()
		if rec.Code != http.StatusNotFound || !strings.Contains(body, tc.family) || !strings.Contains(body, tc.method+" "+tc.path) {
			t.Errorf("%s %s: %d %s, want a 404 naming method and path", tc.method, tc.path, rec.Code, body)
		}
		// The page that lists the endpoints, not the README they left.
		if !strings.Contains(body, `docs/team-gateway.md (\"Endpoints\")`) {
			t.Errorf("%s %s: %s, want it to point at docs/team-gateway.md's Endpoints", tc.method, tc.path, body)
		}
	}
	// A known path with the wrong method is a 405.
	if rec := get(g, alice, "GET", "/v1/chat/completions"); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "POST" {
		t.Errorf("GET /v1/chat/completions: %d", rec.Code)
	}
	if rec := get(g, alice, "GET", "/v1beta/models/m:generateContent"); rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Body.String(), `"status":"UNIMPLEMENTED"`) {
		t.Errorf("GET :generateContent: %d %s", rec.Code, rec.Body)
	}
	// Other paths still belong to the next handler of a Caddy site.
	for _, p := range []string{"/nope", "/index.html", "/v1x", "/ui/"} {
		if rec := get(g, alice, "GET", p); rec.Code != -1 {
			t.Errorf("GET %s answered %d, want it passed on", p, rec.Code)
		}
	}
	all, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), func(o *GatewayOptions) { o.AnswerAllPaths = true })
	if rec := get(all, alice, "GET", "/nope"); rec.Code != http.StatusNotFound {
		t.Errorf("AnswerAllPaths: GET /nope answered %d", rec.Code)
	}
}

// TestModelByID: the SDKs' models.retrieve calls GET /v1/models/{id}.
func TestModelByID(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1")+entry("team/other", "http://127.0.0.1:1"), nil)
	rec := get(g, alice, "GET", "/v1/models/m")
	var o struct{ ID, Object, OwnedBy string }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &o) != nil || o.ID != "m" || o.Object != "model" {
		t.Fatalf("openai shape: %d %s", rec.Code, rec.Body.String())
	}
	rec = get(g, alice, "GET", "/v1/models/team/other", "Anthropic-Version", "2023-06-01")
	var a struct{ Type, ID, DisplayName string }
	if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &a) != nil || a.Type != "model" || a.ID != "team/other" {
		t.Fatalf("anthropic shape: %d %s", rec.Code, rec.Body.String())
	}
	onlyM := &policy.Identity{KeyID: "carol", Role: policy.RoleUser, Models: map[string]struct{}{"m": {}}}
	for _, tc := range []struct {
		id    *policy.Identity
		path  string
		hdr   []string
		shape string
	}{
		{alice, "/v1/models/nosuch", nil, `"code":"model_not_found"`},
		{onlyM, "/v1/models/team/other", nil, `"code":"model_not_found"`},
		{onlyM, "/models/team/other", []string{"X-Api-Key", "k"}, `"type":"not_found_error"`},
	} {
		rec := get(g, tc.id, "GET", tc.path, tc.hdr...)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), tc.shape) {
			t.Errorf("%s: %d %s", tc.path, rec.Code, rec.Body.String())
		}
	}
	if rec := get(g, alice, "DELETE", "/v1/models/m"); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("DELETE /v1/models/m: %d", rec.Code)
	}
}

// An alias may hold a colon (Ollama's "llama3:8b"): only Gemini's own
// actions after the last colon make a Gemini call, so the model can be
// looked up on both model paths, in each one's shape.
func TestAliasWithAColon(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("llama3:8b", "http://127.0.0.1:1"), nil)
	if rec := get(g, alice, "GET", "/v1/models/llama3:8b"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"id":"llama3:8b"`) {
		t.Errorf("GET /v1/models/llama3:8b: %d %s", rec.Code, rec.Body)
	}
	// An OpenAI-compatible deployment embeds, and says so to Gemini SDKs.
	if rec := get(g, alice, "GET", "/v1beta/models/llama3:8b"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"name":"models/llama3:8b"`) ||
		!strings.Contains(rec.Body.String(), `"embedContent"`) {
		t.Errorf("GET /v1beta/models/llama3:8b: %d %s", rec.Code, rec.Body)
	}
}

// With answer_all_paths (caddy gateway), the root answers 404 to all but
// HEAD, the reachability probe.
func TestRootUnderAnswerAllPaths(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), func(o *GatewayOptions) { o.AnswerAllPaths = true })
	if rec := get(g, alice, "POST", "/"); rec.Code != http.StatusNotFound {
		t.Errorf("POST /: %d %s", rec.Code, rec.Body)
	}
	if rec := get(g, alice, "HEAD", "/"); rec.Code != http.StatusOK {
		t.Errorf("HEAD /: %d", rec.Code)
	}
	if rec := get(g, alice, "HEAD", "/v1/models"); rec.Code != http.StatusOK {
		t.Errorf("HEAD /v1/models: %d %s", rec.Code, rec.Body)
	}
	if rec := get(g, alice, "DELETE", "/v1/models"); rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
		t.Errorf("DELETE /v1/models: %d Allow %q", rec.Code, rec.Header().Get("Allow"))
	}
	g2, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), nil)
	if rec := get(g2, alice, "GET", "/"); rec.Code != -1 {
		t.Errorf("GET / in a Caddy site answered %d, want it passed on", rec.Code)
	}
}

// A Gemini action with no model in its path is a 404 for the model, in
// Google's shape, not a 405 of the models list.
func TestGeminiActionWithoutModel(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), nil)
	rec := post(g, alice, "/v1beta/models/:generateContent", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`)
	if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"status":"NOT_FOUND"`) {
		t.Errorf("%d %s", rec.Code, rec.Body)
	}
}

// TestGeminiModelsOnV1: a Gemini client on the /v1 API version
// (@google/genai 3.x's default) lists and looks up models in Google's
// shapes when its key comes as x-goog-api-key or ?key=; OpenAI and
// Anthropic clients keep theirs on the same paths, and ?key= is read
// there only for the Gemini client.
func TestGeminiModelsOnV1(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1")+entry("n", "http://127.0.0.1:1"), nil)
	onlyM := &policy.Identity{KeyID: "m-only", Role: policy.RoleUser, Models: map[string]struct{}{"m": {}}}
	var list struct {
		Models []struct{ Name string } `json:"models"`
		Data   []any                   `json:"data"`
	}
	for _, hdr := range [][]string{{"X-Goog-Api-Key", "k"}, nil} {
		path := "/v1/models"
		if hdr == nil {
			path += "?key=k"
		}
		rec := get(g, onlyM, "GET", path, hdr...)
		if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil || len(list.Models) != 1 || list.Models[0].Name != "models/m" || list.Data != nil {
			t.Fatalf("GET %s %v: %d %s", path, hdr, rec.Code, rec.Body)
		}
		rec = get(g, onlyM, "GET", strings.Replace(path, "models", "models/m", 1), hdr...)
		if !strings.Contains(rec.Body.String(), `"name":"models/m"`) || !strings.Contains(rec.Body.String(), `"supportedGenerationMethods"`) {
			t.Fatalf("GET one model %v: %d %s", hdr, rec.Code, rec.Body)
		}
		rec = get(g, onlyM, "GET", strings.Replace(path, "models", "models/n", 1), hdr...)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"status":"NOT_FOUND"`) {
			t.Fatalf("GET a model the key may not use %v: %d %s", hdr, rec.Code, rec.Body)
		}
	}
	// Its calls under /v1/models/ are still calls.
	if rec := get(g, onlyM, "POST", "/v1/models/m:generateContent", "X-Goog-Api-Key", "k"); rec.Code == http.StatusMethodNotAllowed {
		t.Fatalf("generateContent on v1: %d %s", rec.Code, rec.Body)
	}
	// A method the list does not take is its 405, not the list.
	if rec := get(g, onlyM, "POST", "/v1/models", "X-Goog-Api-Key", "k"); rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("POST /v1/models with a Gemini key: %d %s", rec.Code, rec.Body)
	}
	// Other clients on the same path keep their shapes, a client that
	// sends both a Bearer token and a Gemini key included.
	if rec := get(g, onlyM, "GET", "/v1/models", "Authorization", "Bearer k", "X-Goog-Api-Key", "k"); !strings.Contains(rec.Body.String(), `"object":"list"`) {
		t.Fatalf("OpenAI client with both headers: %s", rec.Body)
	}
	if rec := get(g, onlyM, "GET", "/v1/models", "Authorization", "Bearer k"); !strings.Contains(rec.Body.String(), `"object":"list"`) {
		t.Fatalf("OpenAI client: %s", rec.Body)
	}
	if rec := get(g, onlyM, "GET", "/v1/models", "X-Api-Key", "k"); !strings.Contains(rec.Body.String(), `"has_more"`) {
		t.Fatalf("Anthropic client: %s", rec.Body)
	}
	// ?key= authenticates the Gemini client there, and nobody else.
	a, err := policy.NewAuth([]policy.Key{{Secret: "gemini-secret-key", ID: "g"}})
	if err != nil {
		t.Fatal(err)
	}
	for target, want := range map[string]int{
		"/v1/models?key=gemini-secret-key":           0,
		"/v1/models/m?key=gemini-secret-key":         0,
		"/v1/chat/completions?key=gemini-secret-key": http.StatusUnauthorized,
	} {
		got := 0
		if _, apiErr := a.Identify(NewSite().PresentedKey(httptest.NewRequest("GET", target, nil))); apiErr != nil {
			got = apiErr.Status
		}
		if got != want {
			t.Errorf("%s: status %d, want %d (0: authenticated)", target, got, want)
		}
	}
}

// TestUnconfiguredChatLinksAre404: the resume and MCP approval links are
// answered without a key; without their feature they used to pass on to
// the next handler and end as Caddy's empty 200.
func TestUnconfiguredChatLinksAre404(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), func(o *GatewayOptions) { o.Breaker = nil; o.ApprovalLinks = nil })
	for _, tc := range []struct{ method, path string }{
		{"GET", "/mcp-approvals/xyz"},
		{"POST", "/mcp-approvals/xyz"},
		{"GET", "/modelgate/breaker/resume?k=a&s=b&t=c"},
		{"POST", "/modelgate/breaker/resume"},
	} {
		rec := get(g, nil, tc.method, tc.path)
		if rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"error":{"message"`) {
			t.Errorf("%s %s without the feature: %d %q, want a 404", tc.method, tc.path, rec.Code, rec.Body.String())
		}
	}
}
