package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"

	"github.com/modelgate/modelgate/internal/fakes"
)

const (
	bedrockAKID   = "AKIAINTEGRATION00001"
	bedrockSecret = "integration/secret+Key0123456789abcdefgh"
	bedrockModel  = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	chainAKID     = "AKIACHAININTEGRATION"
	chainSecret   = "chain-secret-integration-0123456789"
)

// cloudCalls drives one alias the way the issue lists: Claude Code's
// /v1/messages (whole and streamed, with its betas), count_tokens, and an
// OpenAI client's chat completions (whole and streamed).
func cloudCalls(t *testing.T, g *gateway, alias string) {
	ctx := context.Background()
	ac := anthropicClient(g, aliceKey, false)
	betas := aoption.WithHeader("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14")
	params := anthropic.MessageNewParams{
		Model: anthropic.Model(alias), MaxTokens: 200,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
	}
	t.Run(alias+"/messages", func(t *testing.T) {
		msg, err := ac.Messages.New(ctx, params, betas)
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text != fakes.DefaultReply || msg.Usage.InputTokens != fakes.AnthropicInputTokens ||
			msg.Usage.OutputTokens != fakes.AnthropicOutputTokens {
			t.Fatalf("message = %+v", msg)
		}
	})
	t.Run(alias+"/messages-stream", func(t *testing.T) {
		stream := ac.Messages.NewStreaming(ctx, params, betas)
		var msg anthropic.Message
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text != fakes.DefaultReply || msg.StopReason != anthropic.StopReasonEndTurn {
			t.Fatalf("streamed message = %+v", msg)
		}
	})
	t.Run(alias+"/count_tokens", func(t *testing.T) {
		n, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
			Model:    anthropic.Model(alias),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		if n.InputTokens < 40 {
			t.Errorf("input_tokens = %d", n.InputTokens)
		}
	})
	oc := openaiClient(g, aliceKey)
	chat := openai.ChatCompletionNewParams{Model: alias, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")}}
	t.Run(alias+"/chat", func(t *testing.T) {
		c, err := oc.Chat.Completions.New(ctx, chat)
		if err != nil {
			t.Fatal(err)
		}
		if c.Choices[0].Message.Content != fakes.DefaultReply {
			t.Fatalf("chat = %+v", c)
		}
	})
	t.Run(alias+"/chat-stream", func(t *testing.T) {
		stream := oc.Chat.Completions.NewStreaming(ctx, chat)
		var text strings.Builder
		for stream.Next() {
			if ch := stream.Current(); len(ch.Choices) > 0 {
				text.WriteString(ch.Choices[0].Delta.Content)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if text.String() != fakes.DefaultReply {
			t.Fatalf("streamed chat = %q", text.String())
		}
	})
}

func TestBedrockIntegration(t *testing.T) {
	rec, chainRec, busyRec := &fakes.Recorder{}, &fakes.Recorder{}, &fakes.Recorder{}
	fake := httptest.NewServer(fakes.Bedrock(fakes.BedrockOptions{Region: "us-west-2", AccessKeyID: bedrockAKID, SecretAccessKey: bedrockSecret}, rec))
	defer fake.Close()
	chain := httptest.NewServer(fakes.Bedrock(fakes.BedrockOptions{Region: "eu-central-1", AccessKeyID: chainAKID, SecretAccessKey: chainSecret}, chainRec))
	defer chain.Close()
	busy := httptest.NewServer(fakes.Bedrock(fakes.BedrockOptions{Options: fakes.Options{Status: http.StatusTooManyRequests},
		Region: "us-west-2", AccessKeyID: bedrockAKID, SecretAccessKey: bedrockSecret}, busyRec))
	defer busy.Close()
	dir := t.TempDir()
	models := fmt.Sprintf(`model_list:
  - model_name: bedrock-claude
    proxy_params:
      model: bedrock/%[1]s
      api_base: %[2]s
      aws_region_name: us-west-2
      aws_access_key_id: os.environ/BEDROCK_AK
      aws_secret_access_key: os.environ/BEDROCK_SK
  - model_name: bedrock-chain
    proxy_params:
      model: bedrock/%[1]s
      api_base: %[3]s
  - model_name: bedrock-busy
    proxy_params:
      model: bedrock/%[1]s
      api_base: %[4]s
      aws_region_name: us-west-2
      aws_access_key_id: os.environ/BEDROCK_AK
      aws_secret_access_key: os.environ/BEDROCK_SK
`, bedrockModel, fake.URL, chain.URL, busy.URL)
	g := startGateway(t, gatewayConfig{models: models, env: []string{
		"BEDROCK_AK=" + bedrockAKID, "BEDROCK_SK=" + bedrockSecret,
		// The chain alias: the SDK's own variables, and no real AWS
		// configuration or instance metadata.
		"AWS_REGION=eu-central-1", "AWS_ACCESS_KEY_ID=" + chainAKID, "AWS_SECRET_ACCESS_KEY=" + chainSecret,
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "none"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED=true", "AWS_PROFILE=",
	}})
	cloudCalls(t, g, "bedrock-claude")
	cloudCalls(t, g, "bedrock-chain")

	// The fake took the signatures (it refuses bad ones) and the dialect.
	paths := map[string]bool{}
	for _, r := range rec.Requests() {
		paths[r.Path] = true
		if strings.Contains(string(r.Body), `"model"`) {
			t.Errorf("a model key reached Bedrock: %s", r.Body)
		}
	}
	for _, p := range []string{"/invoke", "/invoke-with-response-stream", "/count-tokens"} {
		if !paths["/model/"+bedrockModel+p] {
			t.Errorf("no call to %s (calls: %v)", p, paths)
		}
	}
	if chainRec.Count() != 5 { // four inference calls and a count
		t.Errorf("chain alias reached its fake %d times", chainRec.Count())
	}

	// Throttling reaches each client in its own family as a 429.
	ac := anthropicClient(g, aliceKey, false)
	_, err := ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "bedrock-busy", MaxTokens: 10, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	var aerr *anthropic.Error
	if !errors.As(err, &aerr) || aerr.StatusCode != http.StatusTooManyRequests || !strings.Contains(aerr.Error(), "ThrottlingException") {
		t.Errorf("anthropic client: %v", err)
	}
	oc := openaiClient(g, aliceKey)
	_, err = oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "bedrock-busy", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	var oerr *openai.Error
	if !errors.As(err, &oerr) || oerr.StatusCode != http.StatusTooManyRequests {
		t.Errorf("openai client: %v", err)
	}

	log := g.stderr.String()
	for _, secret := range []string{bedrockSecret, chainSecret} {
		if strings.Contains(log, secret) {
			t.Error("a secret key is in the gateway's log")
		}
	}
	var n int
	for _, r := range g.ledgerRecords(t) {
		if r.Provider == "bedrock" && r.Outcome == "ok" {
			n++
			if r.CostPicoUSD <= 0 || r.InputTokens != fakes.AnthropicInputTokens {
				t.Errorf("record %+v", r)
			}
		}
	}
	if n != 8 {
		t.Errorf("%d bedrock records, want 8 (4 inference calls for each of 2 aliases)", n)
	}
}

func TestVertexIntegration(t *testing.T) {
	rec := &fakes.Recorder{}
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer srv.Close()
	sa, err := fakes.NewServiceAccount("integration-proj", srv.URL+"/token")
	if err != nil {
		t.Fatal(err)
	}
	v := fakes.NewVertex(fakes.VertexOptions{Project: "integration-proj", Location: "europe-west1", Account: sa}, rec)
	h = v
	dir := t.TempDir()
	saPath := filepath.Join(dir, "vertex-sa.json")
	if err := os.WriteFile(saPath, sa.JSON, 0o600); err != nil {
		t.Fatal(err)
	}
	models := fmt.Sprintf(`model_list:
  - model_name: vertex-claude
    proxy_params:
      model: vertex_ai/claude-sonnet-4-5@20250929
      api_base: %s
      vertex_location: europe-west1
      vertex_credentials: os.environ/GOOGLE_APPLICATION_CREDENTIALS
`, srv.URL)
	g := startGateway(t, gatewayConfig{models: models, env: []string{"GOOGLE_APPLICATION_CREDENTIALS=" + saPath}})
	cloudCalls(t, g, "vertex-claude")

	prefix := "/v1/projects/integration-proj/locations/europe-west1/publishers/anthropic/models/"
	paths := map[string]bool{}
	for _, r := range rec.Requests() {
		paths[r.Path] = true
	}
	for _, p := range []string{"claude-sonnet-4-5@20250929:rawPredict", "claude-sonnet-4-5@20250929:streamRawPredict", "count-tokens:rawPredict"} {
		if !paths[prefix+p] {
			t.Errorf("no call to %s (calls: %v)", p, paths)
		}
	}
	if v.Granted() != 1 {
		t.Errorf("%d tokens fetched; one, cached, serves every call", v.Granted())
	}
	var n int
	for _, r := range g.ledgerRecords(t) {
		if r.Provider == "vertex_ai" && r.Outcome == "ok" {
			n++
			// europe-west1 is a regional endpoint: Sonnet 4.5 costs 10% more there.
			want := int64(fakes.AnthropicInputTokens)*3_300_000 + int64(fakes.AnthropicOutputTokens)*16_500_000 +
				int64(fakes.AnthropicCacheRead)*330_000 + int64(fakes.AnthropicCacheCreation)*4_125_000
			if r.CostPicoUSD != want {
				t.Errorf("cost %d, want %d", r.CostPicoUSD, want)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d vertex records, want 4", n)
	}
}
