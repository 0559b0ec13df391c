package integration

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
)

// TestClaudeCodeOnBedrockAndVertex runs the real Claude Code through the
// real gateway to a Bedrock alias and a Vertex alias, configured as
// docs/claude-code.md says: its /v1/messages calls are signed for Bedrock (the fake
// recomputes SigV4 and frames the stream as an AWS event stream) and
// carry a service-account token for Vertex (the fake checks it on every
// call); Claude Code's betas reach Bedrock in the body.
func TestClaudeCodeOnBedrockAndVertex(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	brec, vrec := &fakes.Recorder{}, &fakes.Recorder{}
	bedrock := httptest.NewServer(fakes.Bedrock(fakes.BedrockOptions{Region: "us-west-2", AccessKeyID: bedrockAKID, SecretAccessKey: bedrockSecret}, brec))
	t.Cleanup(bedrock.Close)
	var h http.Handler
	vsrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(vsrv.Close)
	sa, err := fakes.NewServiceAccount("cc-proj", vsrv.URL+"/token")
	if err != nil {
		t.Fatal(err)
	}
	h = fakes.NewVertex(fakes.VertexOptions{Project: "cc-proj", Location: "us-east5", Account: sa}, vrec)
	saPath := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(saPath, sa.JSON, 0o600); err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: bedrock-claude
    proxy_params:
      model: bedrock/%s
      api_base: %s
      aws_region_name: us-west-2
      aws_access_key_id: os.environ/BEDROCK_AK
      aws_secret_access_key: os.environ/BEDROCK_SK
  - model_name: vertex-claude
    proxy_params:
      model: vertex_ai/claude-sonnet-4-5@20250929
      api_base: %s
      vertex_location: us-east5
      vertex_credentials: %s
`, bedrockModel, bedrock.URL, vsrv.URL, saPath), env: []string{"BEDROCK_AK=" + bedrockAKID, "BEDROCK_SK=" + bedrockSecret}})

	for _, tc := range []struct {
		alias string
		rec   *fakes.Recorder
		path  string
	}{
		{"bedrock-claude", brec, "/invoke-with-response-stream"},
		{"vertex-claude", vrec, ":streamRawPredict"},
	} {
		t.Run(tc.alias, func(t *testing.T) {
			res := runClaude(t, claude, claudeRun{prompt: "Say hello.", dir: t.TempDir(), env: []string{
				"ANTHROPIC_BASE_URL=" + g.base,
				"ANTHROPIC_AUTH_TOKEN=" + aliceKey,
				"ANTHROPIC_MODEL=" + tc.alias,
				"ANTHROPIC_SMALL_FAST_MODEL=" + tc.alias,
			}})
			if res.Result != fakes.DefaultReply {
				t.Errorf("result %q, want %q", res.Result, fakes.DefaultReply)
			}
			streamed := false
			for _, r := range tc.rec.Requests() {
				if strings.HasSuffix(r.Path, tc.path) {
					streamed = true
					if tc.alias == "bedrock-claude" && !strings.Contains(string(r.Body), `"anthropic_version":"bedrock-2023-05-31"`) {
						t.Errorf("bedrock body %s", r.Body)
					}
				}
			}
			if !streamed {
				t.Errorf("no streamed call reached the fake")
			}
		})
	}
	n := 0
	for _, r := range g.ledgerRecords(t) {
		if r.Endpoint == "messages" && r.Outcome == "ok" && r.SessionID != "" {
			n++
		}
	}
	if n < 2 {
		t.Errorf("%d Claude Code turns in the ledger with a session, want at least 2", n)
	}
}
