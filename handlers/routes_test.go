package handlers

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/policy"
)

// TestRouteFamilies: a route's refusals are in the family its entry
// names, whatever headers the caller sends: the table, not the path or a
// header read again, says what the caller reads.
func TestRouteFamilies(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), nil)
	for _, tc := range []struct{ method, path, family string }{
		{"GET", "/v1/messages", `"type":"error"`},
		{"GET", "/v1/chat/completions", `"error":{"message"`},
		{"GET", "/v1/responses/compact", `"error":{"message"`},
		{"POST", "/v1beta/models", `"status":"UNIMPLEMENTED"`},
	} {
		rec := get(g, alice, tc.method, tc.path, "Anthropic-Version", "2023-06-01")
		if rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Body.String(), tc.family) {
			t.Errorf("%s %s: %d %s, want a 405 with %s", tc.method, tc.path, rec.Code, rec.Body, tc.family)
		}
	}
}

// TestMCPRoutes: /mcp and /mcp/{server} are entries of the table when an
// MCP gateway is configured, and another handler's paths when not.
func TestMCPRoutes(t *testing.T) {
	var served []string
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), func(o *GatewayOptions) {
		o.MCP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served = append(served, r.URL.Path) })
	})
	for _, p := range []string{"/mcp", "/mcp/", "/mcp/github"} {
		if rec := get(g, alice, "POST", p); rec.Code != http.StatusOK {
			t.Errorf("POST %s: %d", p, rec.Code)
		}
	}
	if strings.Join(served, " ") != "/mcp /mcp/ /mcp/github" {
		t.Errorf("served %q", served)
	}
	plain, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), nil)
	if rec := get(plain, alice, "POST", "/mcp"); rec.Code != -1 {
		t.Errorf("without MCP servers, POST /mcp answered %d, want it passed on", rec.Code)
	}
}

// TestMCPBodyBounded: an MCP request's body is bounded by
// MaxRequestBody, as a model request's is (the SDK reads it whole).
func TestMCPBodyBounded(t *testing.T) {
	var readErr error
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), func(o *GatewayOptions) {
		o.MaxRequestBody = 1 << 10
		o.MCP = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, readErr = io.ReadAll(r.Body) })
	})
	req := httptest.NewRequest(http.MethodPost, "/mcp/github", strings.NewReader(strings.Repeat("x", 2<<10)))
	h, ok := g.Route(req)
	if !ok {
		t.Fatal("POST /mcp/github has no route")
	}
	h(httptest.NewRecorder(), req.WithContext(policy.WithIdentity(req.Context(), alice)))
	var mbe *http.MaxBytesError
	if !errors.As(readErr, &mbe) || mbe.Limit != 1<<10 {
		t.Fatalf("reading a 2 KiB body under a 1 KiB bound: %v, want http.MaxBytesError", readErr)
	}
}

// TestRouteAllocations: finding a route costs no allocation, for an exact
// path, a subtree pattern and a documented matcher alike (ServeMux's own
// matching is kept to the patterns that need it: the Conversations API's).
func TestRouteAllocations(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), nil)
	for _, p := range []string{"/v1/chat/completions", "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fx/invoke",
		"/v1/responses/resp_1/input_items", "/v1beta/models/m:generateContent", "/v1/projects/p/locations/l/publishers/anthropic/models/c:rawPredict"} {
		r := httptest.NewRequest(http.MethodPost, p, nil)
		if _, ok := g.Route(r); !ok {
			t.Fatalf("%s: no route", p)
		}
		if n := testing.AllocsPerRun(100, func() { g.Route(r) }); n != 0 {
			t.Errorf("%s: %v allocations to route", p, n)
		}
	}
}

// TestSiteOwnersAndFamilies: the modules before the gateway read the same
// table: who serves a path, and the family a refusal there is written in
// (Bedrock's on its runtime and control-plane paths, which the AWS SDK
// reads in no other shape).
func TestSiteOwnersAndFamilies(t *testing.T) {
	s := NewSite()
	for path, want := range map[string]Owner{
		"/auth/oidc/callback": OwnerOIDC, "/scim/v2": OwnerSCIM, "/scim/v2/Users/1": OwnerSCIM,
		"/v1/organizations": OwnerAdmin, "/v1/organizations/api_keys": OwnerAdmin, "/ui": OwnerDashboard, "/ui/app.js": OwnerDashboard, "/ui/spend-requests/req_1": OwnerSpendLinks,
		"/inference-profiles": OwnerNone, "/v1/messages": OwnerGateway, "/v1/organizationsx": OwnerGateway, "/nope": OwnerGateway,
	} {
		if got := s.Owner(httptest.NewRequest(http.MethodGet, path, nil)); got != want {
			t.Errorf("Owner(%s) = %d, want %d", path, got, want)
		}
	}
	e := &apierror.Error{Status: http.StatusUnauthorized, Message: "missing API key"}
	for _, tc := range []struct{ path, body, header string }{
		{"/model/anthropic.claude/invoke", `{"message":"missing API key"}`, "AccessDeniedException"},
		{"/inference-profiles", `{"message":"missing API key"}`, "AccessDeniedException"},
		{"/v1/messages", `"type":"error"`, ""},
		{"/v1/chat/completions", `"code":"invalid_api_key"`, ""},
		{"/v1beta/models/m:generateContent", `"status":"UNAUTHENTICATED"`, ""},
	} {
		w := httptest.NewRecorder()
		s.WriteError(w, httptest.NewRequest(http.MethodPost, tc.path, nil), e)
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), tc.body) || w.Header().Get("X-Amzn-Errortype") != tc.header {
			t.Errorf("%s: %d %s %v", tc.path, w.Code, w.Body, w.Header())
		}
	}
}

// TestSitePublicEntries: the paths answered without a key are the table's
// public entries, each for the methods it names, and nothing else is:
// not a health path's POST, not the dashboard's POST, not an API path.
func TestSitePublicEntries(t *testing.T) {
	s := NewSite()
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/health/liveliness", true}, {"HEAD", "/health/liveness", true}, {"GET", "/health/readiness", true},
		{"POST", "/health/readiness", false}, {"GET", "/health", false},
		{"HEAD", "/", true}, {"GET", "/", false},
		{"GET", "/ui", true}, {"GET", "/ui/app.js", true}, {"POST", "/ui/", false},
		{"GET", "/ui/spend-requests/req_1", true}, {"POST", "/ui/spend-requests/req_1", false},
		{"GET", "/mcp-approvals/tok", true}, {"POST", "/mcp-approvals/tok", false}, {"DELETE", "/mcp-approvals/tok", false},
		{"GET", "/v1/models", false}, {"POST", "/v1/chat/completions", false}, {"GET", "/v1/organizations", false},
		{"GET", "/auth/oidc/login", false}, {"GET", "/uix", false},
		// Only under their own names: dot segments and doubled slashes
		// (curl --path-as-is, %2e%2e) used to pass the raw prefix test
		// on their way to an endpoint that needs a key.
		{"POST", "/mcp-approvals/../v1/chat/completions", false}, {"POST", "/mcp-approvals/%2e%2e/v1/chat/completions", false},
		{"POST", "/mcp-approvals//x", false}, {"POST", "/ui/spend-requests/../../v1/messages", false},
		{"GET", "/ui/../v1/models", false}, {"GET", "/ui/./app.js", false}, {"GET", "//health/liveness", false},
		{"GET", "/modelgate/breaker/resume/../../../v1/models", false},
	} {
		if got := s.Public(httptest.NewRequest(tc.method, tc.path, nil)); got != tc.want {
			t.Errorf("Public(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}

// TestSitePresentedKeyGeminiOnly: ?key= is a key only on the entries in
// Gemini's family; a header key wins everywhere.
func TestSitePresentedKeyGeminiOnly(t *testing.T) {
	s := NewSite()
	for target, want := range map[string]string{
		"/v1beta/models/m:generateContent?key=k": "k", "/v1/models/m:streamGenerateContent?alt=sse&key=k": "k",
		"/v1beta/models?key=k": "k", "/v1/chat/completions?key=k": "", "/v1/messages?key=k": "", "/v1/models?key=k": "k",
	} {
		r := httptest.NewRequest(http.MethodGet, target, nil)
		if got := s.PresentedKey(r); got != want {
			t.Errorf("PresentedKey(%s) = %q, want %q", target, got, want)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/v1beta/models/m:generateContent?key=k", nil)
	r.Header.Set("X-Goog-Api-Key", "h")
	if got := s.PresentedKey(r); got != "h" {
		t.Errorf("header key lost to ?key=: %q", got)
	}
}

// TestStoredResponseRoutes: a stored response's calls are route-table
// entries: a method a call does not take is a 405 naming the ones it does
// (HEAD too, which a GET pattern would take), in OpenAI's family, under
// /v1/responses and /responses alike; an unknown call below an id is the
// gateway's 404; without a store every id is not found.
func TestStoredResponseRoutes(t *testing.T) {
	g, _ := testGateway(t, "model_list:\n"+entry("m", "http://127.0.0.1:1"), nil)
	for _, tc := range []struct{ method, path, allow string }{
		{"POST", "/v1/responses/resp_1", "GET, DELETE"},
		{"HEAD", "/v1/responses/resp_1/input_items", "GET"},
		{"GET", "/responses/resp_1/cancel", "POST"},
		{"PUT", "/responses/resp_1", "GET, DELETE"},
	} {
		rec := serveAs(g, tc.method, tc.path)
		if rec.Code != 405 || rec.Header().Get("Allow") != tc.allow || tc.method != "HEAD" && !strings.Contains(rec.Body.String(), `"error":{"message":"method `+tc.method) {
			t.Errorf("%s %s: %d Allow %q %s", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), rec.Body)
		}
	}
	for _, p := range []string{"/v1/responses/resp_1", "/responses/resp_1/input_items", "/v1/responses/resp_1/nosuch"} {
		if rec := serveAs(g, "GET", p); rec.Code != 404 || !strings.Contains(rec.Body.String(), `"error":{"message"`) {
			t.Errorf("GET %s: %d %s", p, rec.Code, rec.Body)
		}
	}
}

// serveAs serves method path for alice.
func serveAs(g *Gateway, method, path string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, nil)
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req.WithContext(policy.WithIdentity(req.Context(), alice)))
	return rec
}
