package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/providers"
)

const (
	testAKID   = "AKIAMODELGATETEST01"
	testSecret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
	bedrockID  = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
)

type bedrockFake struct {
	srv *httptest.Server
	rec *fakes.Recorder
}

func newBedrockFake(t *testing.T, o fakes.BedrockOptions) *bedrockFake {
	t.Helper()
	if o.Region == "" {
		o.Region = "us-west-2"
	}
	if o.AccessKeyID == "" {
		o.AccessKeyID, o.SecretAccessKey = testAKID, testSecret
	}
	f := &bedrockFake{rec: &fakes.Recorder{}}
	f.srv = httptest.NewServer(fakes.Bedrock(o, f.rec))
	t.Cleanup(f.srv.Close)
	return f
}

func bedrockEntry(alias, base string, extra ...string) string {
	s := fmt.Sprintf("  - model_name: %s\n    proxy_params:\n      model: bedrock/%s\n      api_base: %s\n      aws_region_name: us-west-2\n", alias, bedrockID, base)
	if len(extra) == 0 {
		extra = []string{"aws_access_key_id: " + testAKID, "aws_secret_access_key: " + testSecret}
	}
	for _, e := range extra {
		s += "      " + e + "\n"
	}
	return s
}

const messagesBody = `{"model":%q,"max_tokens":64,"stream":%v,"metadata":{"user_id":"u1"},"messages":[{"role":"user","content":"hi"}]}`

func TestBedrockFakeRefusesBadSignatures(t *testing.T) {
	f := newBedrockFake(t, fakes.BedrockOptions{})
	body := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	send := func(secret string, tamper func(*http.Request)) int {
		req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		sum := sha256.Sum256(body)
		creds := aws.Credentials{AccessKeyID: testAKID, SecretAccessKey: secret}
		if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hex.EncodeToString(sum[:]), "bedrock", "us-west-2", time.Now()); err != nil {
			t.Fatal(err)
		}
		if tamper != nil {
			tamper(req)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(testSecret, nil); got != http.StatusOK {
		t.Fatalf("a good signature got %d", got)
	}
	if got := send("wrong-secret-wrong-secret", nil); got != http.StatusForbidden {
		t.Errorf("a wrong secret got %d", got)
	}
	if got := send(testSecret, func(r *http.Request) { r.Header.Set("Content-Type", "text/plain") }); got != http.StatusForbidden {
		t.Errorf("a changed signed header got %d", got)
	}
	if got := send(testSecret, func(r *http.Request) {
		other := bytes.Replace(body, []byte("hi"), []byte("ho"), 1)
		r.Body, r.ContentLength = ioNopCloser(other), int64(len(other))
	}); got != http.StatusForbidden {
		t.Errorf("a changed body got %d", got)
	}
}

func TestBedrockThroughGateway(t *testing.T) {
	f := newBedrockFake(t, fakes.BedrockOptions{})
	g, obs := testGateway(t, "model_list:\n"+bedrockEntry("claude", f.srv.URL), nil)

	// Claude Code's shape: /v1/messages with betas in the header.
	rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", false),
		"Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14", "Anthropic-Version", "2023-06-01")
	if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), fakes.DefaultReply) {
		t.Fatalf("messages: %d %s", rr.Code, rr.Body)
	}
	up := f.rec.Last()
	if up.Path != "/model/"+bedrockID+"/invoke" || !strings.Contains(up.Header.Get("Authorization"), "Credential="+testAKID+"/") {
		t.Errorf("upstream request: %s %v", up.Path, up.Header)
	}
	var sent map[string]any
	_ = json.Unmarshal(up.Body, &sent)
	if sent["anthropic_version"] != "bedrock-2023-05-31" || sent["model"] != nil || sent["stream"] != nil ||
		fmt.Sprint(sent["anthropic_beta"]) != "[interleaved-thinking-2025-05-14]" {
		t.Errorf("upstream body: %s", up.Body)
	}
	recs := obs.Records()
	if r := recs[len(recs)-1]; r.Provider != "bedrock" || r.InputTokens != fakes.AnthropicInputTokens || r.OutputTokens != fakes.AnthropicOutputTokens || r.CostPicoUSD <= 0 {
		t.Errorf("record: %+v", r)
	}

	// Streamed, for an Anthropic client: the event stream becomes SSE.
	rr = post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", true))
	if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), "event: message_stop") || !strings.Contains(rr.Body.String(), `"text":"fake "`) {
		t.Fatalf("messages stream: %d %s", rr.Code, rr.Body)
	}
	if p := f.rec.Last().Path; p != "/model/"+bedrockID+"/invoke-with-response-stream" {
		t.Errorf("stream path %s", p)
	}

	// OpenAI clients, whole and streamed.
	rr = post(g, alice, "/v1/chat/completions", chatBody("claude", false))
	if rr.Code != http.StatusOK || content(t, rr.Body.Bytes()) != fakes.DefaultReply {
		t.Fatalf("chat: %d %s", rr.Code, rr.Body)
	}
	rr = post(g, alice, "/v1/chat/completions", chatBody("claude", true))
	if rr.Code != http.StatusOK || !strings.HasSuffix(rr.Body.String(), "data: [DONE]\n\n") || !strings.Contains(rr.Body.String(), "upstream.") {
		t.Fatalf("chat stream: %d %s", rr.Code, rr.Body)
	}

	// Responses, through the hub.
	rr = post(g, alice, "/v1/responses", `{"model":"claude","input":"hi","store":false}`)
	if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), fakes.DefaultReply) {
		t.Fatalf("responses: %d %s", rr.Code, rr.Body)
	}

	// count_tokens through Bedrock's CountTokens.
	rr = post(g, alice, "/v1/messages/count_tokens", `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`)
	if rr.Code != http.StatusOK || !strings.HasPrefix(rr.Body.String(), `{"input_tokens":`) {
		t.Fatalf("count_tokens: %d %s", rr.Code, rr.Body)
	}
	if p := f.rec.Last().Path; p != "/model/"+bedrockID+"/count-tokens" {
		t.Errorf("count path %s", p)
	}
}

func TestBedrockErrors(t *testing.T) {
	t.Run("throttling is retried on the next deployment", func(t *testing.T) {
		busy := newBedrockFake(t, fakes.BedrockOptions{Options: fakes.Options{Status: http.StatusTooManyRequests}})
		ok := newBedrockFake(t, fakes.BedrockOptions{})
		g, _ := testGateway(t, "model_list:\n"+bedrockEntry("claude", busy.srv.URL)+bedrockEntry("claude", ok.srv.URL)+
			"router_settings:\n  routing_strategy: latency-based-routing\n", nil)
		for range 4 {
			rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", false))
			if rr.Code != http.StatusOK {
				t.Fatalf("%d %s", rr.Code, rr.Body)
			}
		}
		if busy.rec.Count() == 0 {
			t.Error("the throttled deployment was never tried")
		}
	})
	t.Run("throttling alone is a 429 in the client's family", func(t *testing.T) {
		busy := newBedrockFake(t, fakes.BedrockOptions{Options: fakes.Options{Status: http.StatusTooManyRequests}})
		g, _ := testGateway(t, "model_list:\n"+bedrockEntry("claude", busy.srv.URL), nil)
		rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", false))
		if rr.Code != http.StatusTooManyRequests || !strings.Contains(rr.Body.String(), `"type":"rate_limit_error"`) || !strings.Contains(rr.Body.String(), "ThrottlingException: fake failure 429") {
			t.Errorf("anthropic: %d %s", rr.Code, rr.Body)
		}
		rr = post(g, alice, "/v1/chat/completions", chatBody("claude", true))
		if rr.Code != http.StatusTooManyRequests || !strings.Contains(rr.Body.String(), `"code":"rate_limit_exceeded"`) {
			t.Errorf("openai: %d %s", rr.Code, rr.Body)
		}
	})
	for _, tc := range []struct {
		name   string
		o      fakes.BedrockOptions
		status int
		want   string
	}{
		{"access denied", fakes.BedrockOptions{Options: fakes.Options{Status: http.StatusForbidden}}, 403, "AccessDeniedException"},
		{"validation", fakes.BedrockOptions{Options: fakes.Options{Status: http.StatusBadRequest}}, 400, "ValidationException"},
		{"expired credentials", fakes.BedrockOptions{Expired: true}, 403, "ExpiredTokenException: The security token included in the request is expired"},
		{"wrong secret", fakes.BedrockOptions{AccessKeyID: testAKID, SecretAccessKey: "another-secret-entirely"}, 403, "InvalidSignatureException"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newBedrockFake(t, tc.o)
			g, _ := testGateway(t, "model_list:\n"+bedrockEntry("claude", f.srv.URL), nil)
			rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", false))
			if rr.Code != tc.status || !strings.Contains(rr.Body.String(), tc.want) {
				t.Errorf("%d %s", rr.Code, rr.Body)
			}
			if strings.Contains(rr.Body.String(), testSecret) {
				t.Errorf("secret in the answer: %s", rr.Body)
			}
		})
	}
	t.Run("in-band throttling before any byte is a 429", func(t *testing.T) {
		f := newBedrockFake(t, fakes.BedrockOptions{StreamException: "throttlingException"})
		g, _ := testGateway(t, "model_list:\n"+bedrockEntry("claude", f.srv.URL), nil)
		rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", true))
		if rr.Code != http.StatusTooManyRequests || !strings.Contains(rr.Body.String(), "throttlingException") {
			t.Errorf("%d %s", rr.Code, rr.Body)
		}
	})
	t.Run("in-band exception mid-stream ends the stream with an error event", func(t *testing.T) {
		f := newBedrockFake(t, fakes.BedrockOptions{StreamException: "modelStreamErrorException", StreamExceptionAfter: 2})
		g, obs := testGateway(t, "model_list:\n"+bedrockEntry("claude", f.srv.URL), nil)
		rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", true))
		if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), "event: error") || strings.Contains(rr.Body.String(), "message_stop") {
			t.Errorf("%d %s", rr.Code, rr.Body)
		}
		if r := obs.Records()[0]; r.Outcome != "error" {
			t.Errorf("record: %+v", r)
		}
	})
}

// TestBedrockCredentialChain: with no key pair in the entry, the AWS
// chain's environment credentials sign the request.
func TestBedrockCredentialChain(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIACHAINKEY0000001")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "chain-secret-chain-secret")
	t.Setenv("AWS_SESSION_TOKEN", "chain-session-token-123")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_PROFILE", "")
	f := newBedrockFake(t, fakes.BedrockOptions{AccessKeyID: "AKIACHAINKEY0000001", SecretAccessKey: "chain-secret-chain-secret", SessionToken: "chain-session-token-123"})
	g, _ := testGateway(t, "model_list:\n"+bedrockEntry("claude", f.srv.URL, "timeout: 30"), nil)
	rr := post(g, alice, "/v1/chat/completions", chatBody("claude", false))
	if rr.Code != http.StatusOK {
		t.Fatalf("%d %s", rr.Code, rr.Body)
	}
	if f.rec.Last().Header.Get("X-Amz-Security-Token") != "chain-session-token-123" {
		t.Error("no session token sent")
	}
}

type vertexFake struct {
	v   *fakes.Vertex
	srv *httptest.Server
	rec *fakes.Recorder
	sa  *fakes.ServiceAccount
}

func newVertexFake(t *testing.T, o fakes.VertexOptions) *vertexFake {
	t.Helper()
	f := &vertexFake{rec: &fakes.Recorder{}}
	var h http.Handler
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(f.srv.Close)
	sa, err := fakes.NewServiceAccount("proj-1", f.srv.URL+"/token")
	if err != nil {
		t.Fatal(err)
	}
	f.sa = sa
	o.Project, o.Location = "proj-1", "us-east5"
	if o.Account == nil {
		o.Account = sa
	}
	f.v = fakes.NewVertex(o, f.rec)
	h = f.v
	return f
}

func (f *vertexFake) entry(t *testing.T, alias string) string {
	path := filepath.Join(t.TempDir(), "sa.json")
	if err := os.WriteFile(path, f.sa.JSON, 0o600); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("  - model_name: %s\n    proxy_params:\n      model: vertex_ai/claude-sonnet-4-5@20250929\n      api_base: %s\n      vertex_location: us-east5\n      vertex_credentials: %s\n", alias, f.srv.URL, path)
}

func TestVertexThroughGateway(t *testing.T) {
	f := newVertexFake(t, fakes.VertexOptions{})
	g, obs := testGateway(t, "model_list:\n"+f.entry(t, "claude"), nil)
	prefix := "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/"

	rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", false), "Anthropic-Beta", "context-1m-2025-08-07")
	if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), fakes.DefaultReply) {
		t.Fatalf("messages: %d %s", rr.Code, rr.Body)
	}
	up := f.rec.Last()
	if up.Path != prefix+"claude-sonnet-4-5@20250929:rawPredict" || up.Header.Get("Anthropic-Beta") != "context-1m-2025-08-07" || up.Header.Get("X-Api-Key") != "" {
		t.Errorf("upstream: %s %v", up.Path, up.Header)
	}
	rr = post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", true))
	if rr.Code != http.StatusOK || !strings.Contains(rr.Body.String(), "event: message_stop") {
		t.Fatalf("messages stream: %d %s", rr.Code, rr.Body)
	}
	if p := f.rec.Last().Path; p != prefix+"claude-sonnet-4-5@20250929:streamRawPredict" {
		t.Errorf("stream path %s", p)
	}
	rr = post(g, alice, "/v1/chat/completions", chatBody("claude", true))
	if rr.Code != http.StatusOK || !strings.HasSuffix(rr.Body.String(), "data: [DONE]\n\n") {
		t.Fatalf("chat stream: %d %s", rr.Code, rr.Body)
	}
	rr = post(g, alice, "/v1/messages/count_tokens", `{"model":"claude","messages":[{"role":"user","content":"hi"}]}`)
	if rr.Code != http.StatusOK || !strings.HasPrefix(rr.Body.String(), `{"input_tokens":`) {
		t.Fatalf("count_tokens: %d %s", rr.Code, rr.Body)
	}
	if p := f.rec.Last().Path; p != prefix+"count-tokens:rawPredict" {
		t.Errorf("count path %s", p)
	}
	if n := f.v.Granted(); n != 1 {
		t.Errorf("%d tokens fetched for four calls; the token is to be cached", n)
	}
	if r := obs.Records()[0]; r.Provider != "vertex_ai" || r.CostPicoUSD <= 0 {
		t.Errorf("record: %+v", r)
	}

	// A revoked token: the refusal makes the gateway fetch a new one and
	// send the request again; the client never sees the 401. The request
	// sent again keeps the client's trace context.
	f.v.RevokeAll()
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	rr = post(g, alice, "/v1/chat/completions", chatBody("claude", false), "Traceparent", tp)
	if rr.Code != http.StatusOK || f.v.Granted() != 2 {
		t.Fatalf("after revocation: %d %s (tokens %d)", rr.Code, rr.Body, f.v.Granted())
	}
	if got := f.rec.Last().Header.Get("Traceparent"); got != tp {
		t.Errorf("the request sent again with a new token has traceparent %q, want the client's", got)
	}
}

// TestVertexApplicationDefaultCredentials: an entry without
// vertex_credentials takes its tokens from Application Default
// Credentials: the key file GOOGLE_APPLICATION_CREDENTIALS names, else the
// metadata server (GCE_METADATA_HOST points the library at the fake's).
func TestVertexApplicationDefaultCredentials(t *testing.T) {
	t.Setenv("HOME", t.TempDir()) // no gcloud login to find
	entry := func(f *vertexFake) string {
		return fmt.Sprintf("  - model_name: claude\n    proxy_params:\n      model: vertex_ai/claude-sonnet-4-5@20250929\n      api_base: %s\n      vertex_location: us-east5\n      vertex_project: proj-1\n", f.srv.URL)
	}
	t.Run("key file from the environment", func(t *testing.T) {
		f := newVertexFake(t, fakes.VertexOptions{})
		path := filepath.Join(t.TempDir(), "sa.json")
		if err := os.WriteFile(path, f.sa.JSON, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", path)
		g, _ := testGateway(t, "model_list:\n"+entry(f), nil)
		rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", false))
		if rr.Code != http.StatusOK || f.v.Granted() != 1 {
			t.Fatalf("%d %s (tokens granted %d)", rr.Code, rr.Body, f.v.Granted())
		}
	})
	t.Run("metadata server", func(t *testing.T) {
		f := newVertexFake(t, fakes.VertexOptions{})
		t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "")
		t.Setenv("GCE_METADATA_HOST", strings.TrimPrefix(f.srv.URL, "http://"))
		g, _ := testGateway(t, "model_list:\n"+entry(f), nil)
		for range 2 {
			rr := post(g, alice, "/v1/chat/completions", chatBody("claude", false))
			if rr.Code != http.StatusOK {
				t.Fatalf("%d %s", rr.Code, rr.Body)
			}
		}
		if f.v.Granted() != 1 {
			t.Errorf("%d tokens fetched for two requests; the token should be reused", f.v.Granted())
		}
		if up := f.rec.Last(); up.Path != "/v1/projects/proj-1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict" {
			t.Errorf("upstream path %s", up.Path)
		}
	})
}

func TestVertexErrors(t *testing.T) {
	t.Run("throttling", func(t *testing.T) {
		f := newVertexFake(t, fakes.VertexOptions{Options: fakes.Options{Status: http.StatusTooManyRequests}})
		g, _ := testGateway(t, "model_list:\n"+f.entry(t, "claude"), nil)
		rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude", false))
		if rr.Code != http.StatusTooManyRequests || !strings.Contains(rr.Body.String(), "RESOURCE_EXHAUSTED: fake failure 429") {
			t.Errorf("%d %s", rr.Code, rr.Body)
		}
	})
	t.Run("a key the token endpoint does not know", func(t *testing.T) {
		stranger, err := fakes.NewServiceAccount("proj-1", "http://unused/token")
		if err != nil {
			t.Fatal(err)
		}
		f := newVertexFake(t, fakes.VertexOptions{Account: stranger})
		g, _ := testGateway(t, "model_list:\n"+f.entry(t, "claude"), nil)
		rr := post(g, alice, "/v1/chat/completions", chatBody("claude", false))
		if rr.Code != http.StatusBadGateway || !strings.Contains(rr.Body.String(), "no Vertex AI access token") || !strings.Contains(rr.Body.String(), "invalid_grant") {
			t.Errorf("%d %s", rr.Code, rr.Body)
		}
		if strings.Contains(rr.Body.String(), "PRIVATE KEY") || f.rec.Count() != 0 {
			t.Errorf("leaked or called without a token: %s", rr.Body)
		}
	})
}

// TestCloudSecretsRedacted: the key pair, the private key and the current
// access token are all on the redaction list.
func TestCloudSecretsRedacted(t *testing.T) {
	f := newVertexFake(t, fakes.VertexOptions{})
	b := newBedrockFake(t, fakes.BedrockOptions{})
	g, _ := testGateway(t, "model_list:\n"+f.entry(t, "v")+bedrockEntry("b", b.srv.URL), nil)
	if rr := post(g, alice, "/v1/chat/completions", chatBody("v", false)); rr.Code != http.StatusOK {
		t.Fatal(rr.Body)
	}
	tok := strings.TrimPrefix(f.rec.Last().Header.Get("Authorization"), "Bearer ")
	vb, bb := g.backends["v"][0], g.backends["b"][0]
	e := vb.Redact(upstreamErr("invalid token " + tok))
	if strings.Contains(e.Message, tok) || !strings.Contains(e.Message, "[redacted]") {
		t.Errorf("token kept: %s", e.Message)
	}
	e = bb.Redact(upstreamErr("bad " + testSecret + " for " + testAKID))
	if strings.Contains(e.Message, testSecret) || strings.Contains(e.Message, testAKID) {
		t.Errorf("key pair kept: %s", e.Message)
	}
}

func ioNopCloser(b []byte) *nopBody { return &nopBody{bytes.NewReader(b)} }

type nopBody struct{ *bytes.Reader }

func (nopBody) Close() error { return nil }

func upstreamErr(msg string) *providers.APIError {
	return &providers.APIError{Status: http.StatusBadRequest, Message: msg}
}
