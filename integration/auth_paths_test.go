package integration

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// rawRequest sends one HTTP/1.1 request line as written (no client-side
// path cleaning) and returns the status code and body.
func rawRequest(t *testing.T, base, method, target string, headers ...string) (int, string) {
	t.Helper()
	host := strings.TrimPrefix(base, "http://")
	c, err := net.DialTimeout("tcp", host, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := `{"model":"echo","messages":[{"role":"user","content":"bypass"}]}`
	if method == http.MethodGet || method == http.MethodHead {
		body = ""
	}
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n", method, target, host, len(body))
	for i := 0; i+1 < len(headers); i += 2 {
		fmt.Fprintf(c, "%s: %s\r\n", headers[i], headers[i+1])
	}
	fmt.Fprintf(c, "\r\n%s", body)
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: method})
	if err != nil {
		t.Fatalf("%s %s: %v", method, target, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestReviewNoKeyNoService: without a key, no spelling of an API path
// (trailing or doubled slashes, escaped or dot segments, queries) gets an
// answer or reaches an upstream.
func TestReviewNoKeyNoService(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	cases := []struct{ method, target string }{
		{"POST", "/v1/chat/completions"},
		{"POST", "/v1/chat/completions/"},
		{"POST", "//v1/chat/completions"},
		{"POST", "/v1/chat%2Fcompletions"},
		{"POST", "/v1/./chat/completions"},
		{"POST", "/v1/messages?beta=true"},
		{"POST", "/v1/messages/count_tokens?beta=true"},
		{"POST", "/health/liveliness/../../v1/chat/completions"},
		{"POST", "/health/liveliness"},
		{"GET", "/v1/models"},
		{"HEAD", "/v1/models"},
		{"GET", "/models?beta=true"},
		{"GET", "/health"},
		{"GET", "/v1/organizations/usage_report/messages?starting_at=2025-01-01T00:00:00Z"},
		{"GET", "/v1/organizations/cost_report?starting_at=2025-01-01T00:00:00Z"},
		// Claude Code's Bedrock and Vertex modes pointed at the gateway.
		{"POST", "/model/claude/invoke-with-response-stream"},
		{"POST", "/model/claude/count-tokens"},
		{"POST", "/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude:streamRawPredict"},
	}
	for _, c := range cases {
		status, body := rawRequest(t, g.base, c.method, c.target)
		if status/100 == 2 {
			t.Errorf("%s %s without a key: %d %q", c.method, c.target, status, body)
		}
		if strings.Contains(body, "bypass") || strings.Contains(body, `"data"`) {
			t.Errorf("%s %s without a key served content: %q", c.method, c.target, body)
		}
	}
	if n := u.openaiRec.Count() + u.anthropicRec.Count() + u.ollamaRec.Count(); n != 0 {
		t.Errorf("unauthenticated requests reached upstreams %d times", n)
	}
}

// TestKeylessChatLinkPathsStopAtTheGateway: the chat links' prefixes are
// answered without a key, but only under their own names: dot segments
// under them are refused for want of a key, and a link whose feature is
// not configured (MCP approvals here) is the gateway's 404. Neither is
// passed on keyless to what follows on the site (here a `respond "not
// found"`, elsewhere an empty 200).
func TestKeylessChatLinkPathsStopAtTheGateway(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	for _, c := range []struct {
		method, target string
		status         int
	}{
		{"POST", "/mcp-approvals/../v1/chat/completions", http.StatusUnauthorized},
		{"POST", "/mcp-approvals/%2e%2e/v1/chat/completions", http.StatusUnauthorized},
		{"POST", "/ui/spend-requests/../../v1/chat/completions", http.StatusUnauthorized},
		{"GET", "/ui/../v1/models", http.StatusUnauthorized},
		{"POST", "/modelgate/breaker/resume/../../../v1/chat/completions", http.StatusUnauthorized},
		{"GET", "/mcp-approvals/xyz", http.StatusNotFound},
		{"POST", "/mcp-approvals/xyz", http.StatusUnauthorized}, // deciding needs an approver signed in
	} {
		status, body := rawRequest(t, g.base, c.method, c.target)
		if status != c.status || !strings.Contains(body, `"error"`) {
			t.Errorf("%s %s without a key: %d %q, want the gateway's %d", c.method, c.target, status, body, c.status)
		}
	}
	if n := u.openaiRec.Count() + u.anthropicRec.Count() + u.ollamaRec.Count(); n != 0 {
		t.Errorf("unauthenticated requests reached upstreams %d times", n)
	}
}
