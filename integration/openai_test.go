package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/modelgate/modelgate/internal/fakes"
)

func openaiClient(g *gateway, key string) openai.Client {
	return openai.NewClient(option.WithBaseURL(g.base+"/v1/"), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithRequestTimeout(20*time.Second))
}

// expectedUsage is what the OpenAI client must see for each alias, per the
// fakes' fixed counters and the spec's usage mapping.
var expectedUsage = map[string][2]int64{
	"oa":     {fakes.OpenAIPromptTokens, fakes.OpenAICompletionTokens},
	"claude": {fakes.AnthropicInputTokens + fakes.AnthropicCacheRead + fakes.AnthropicCacheCreation, fakes.AnthropicOutputTokens},
	"llama":  {fakes.OllamaPromptEvalCount, fakes.OllamaEvalCount},
}

func TestOpenAIClientAgainstEveryBackend(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	client := openaiClient(g, aliceKey)
	ctx := context.Background()

	for _, alias := range []string{"oa", "claude", "llama"} {
		t.Run(alias+"/non-stream", func(t *testing.T) {
			resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
				Model:    alias,
				Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Say hello")},
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Choices[0].Message.Content; got != fakes.DefaultReply {
				t.Errorf("content = %q, want %q", got, fakes.DefaultReply)
			}
			if resp.Choices[0].FinishReason != "stop" {
				t.Errorf("finish_reason = %q, want stop", resp.Choices[0].FinishReason)
			}
			want := expectedUsage[alias]
			if resp.Usage.PromptTokens != want[0] || resp.Usage.CompletionTokens != want[1] {
				t.Errorf("usage = %d/%d, want %d/%d", resp.Usage.PromptTokens, resp.Usage.CompletionTokens, want[0], want[1])
			}
		})
		t.Run(alias+"/stream", func(t *testing.T) {
			stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model:         alias,
				Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
				StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
			})
			var acc openai.ChatCompletionAccumulator
			chunks := 0
			for stream.Next() {
				acc.AddChunk(stream.Current())
				chunks++
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if chunks < 3 {
				t.Errorf("only %d chunks: the reply was not streamed", chunks)
			}
			if got := acc.Choices[0].Message.Content; got != fakes.DefaultReply {
				t.Errorf("content = %q, want %q", got, fakes.DefaultReply)
			}
			want := expectedUsage[alias]
			if acc.Usage.PromptTokens != want[0] || acc.Usage.CompletionTokens != want[1] {
				t.Errorf("usage = %d/%d, want %d/%d", acc.Usage.PromptTokens, acc.Usage.CompletionTokens, want[0], want[1])
			}
		})
		for _, streaming := range []bool{false, true} {
			name := alias + "/tools"
			if streaming {
				name += "-stream"
			}
			t.Run(name, func(t *testing.T) { toolRoundTrip(t, client, alias, streaming) })
		}
	}

	t.Run("upstream requests", func(t *testing.T) {
		oa := u.openaiRec.Last()
		if !strings.HasSuffix(oa.Path, "/v1/chat/completions") {
			t.Errorf("openai path = %q", oa.Path)
		}
		if got := oa.Header.Get("Authorization"); got != "Bearer upstream-openai-secret" {
			t.Errorf("openai upstream Authorization = %q, want the deployment's own key", got)
		}
		for _, rec := range append(append(u.openaiRec.Requests(), u.anthropicRec.Requests()...), u.ollamaRec.Requests()...) {
			if strings.Contains(string(rec.Body), aliceKey) || strings.Contains(rec.Header.Get("Authorization"), aliceKey) || rec.Header.Get("X-Api-Key") == aliceKey {
				t.Fatalf("client key reached an upstream at %s", rec.Path)
			}
		}
		var body struct{ Model string }
		_ = json.Unmarshal(oa.Body, &body)
		if body.Model != "fake-gpt" {
			t.Errorf("openai upstream model = %q, want fake-gpt", body.Model)
		}
		an := u.anthropicRec.Last()
		if an.Path != "/v1/messages" || an.Header.Get("X-Api-Key") != "upstream-anthropic-secret" || an.Header.Get("Anthropic-Version") == "" {
			t.Errorf("anthropic upstream got path %q, key ok %v, version %q", an.Path, an.Header.Get("X-Api-Key") == "upstream-anthropic-secret", an.Header.Get("Anthropic-Version"))
		}
		ol := u.ollamaRec.Requests()
		var first struct {
			Model  string `json:"model"`
			Stream *bool  `json:"stream"`
		}
		_ = json.Unmarshal(ol[0].Body, &first)
		if ol[0].Path != "/api/chat" || first.Model != "llama-fake" || first.Stream == nil || *first.Stream {
			t.Errorf("ollama non-stream request: path %q model %q stream %v; want /api/chat, llama-fake, explicit false", ol[0].Path, first.Model, first.Stream)
		}
	})
}

// toolRoundTrip asks for the weather, expects a tool call, answers it and
// expects text.
func toolRoundTrip(t *testing.T, client openai.Client, alias string, streaming bool) {
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{
		Model:    alias,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What is the weather in Oslo?")},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:        fakes.WeatherToolName,
			Description: openai.String("Current weather for a city"),
			Parameters: shared.FunctionParameters{
				"type":       "object",
				"properties": map[string]any{"city": map[string]any{"type": "string"}},
				"required":   []string{"city"},
			},
		})},
	}
	var msg openai.ChatCompletionMessage
	var finish string
	if streaming {
		stream := client.Chat.Completions.NewStreaming(ctx, params)
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		msg, finish = acc.Choices[0].Message, acc.Choices[0].FinishReason
	} else {
		resp, err := client.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg, finish = resp.Choices[0].Message, resp.Choices[0].FinishReason
	}
	if finish != "tool_calls" {
		t.Errorf("finish_reason = %q, want tool_calls", finish)
	}
	if len(msg.ToolCalls) != 1 {
		t.Fatalf("tool_calls = %d, want 1 (message %+v)", len(msg.ToolCalls), msg)
	}
	call := msg.ToolCalls[0]
	if call.Function.Name != fakes.WeatherToolName || call.ID == "" {
		t.Errorf("tool call = %+v", call)
	}
	var args map[string]string
	if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil || args["city"] != "Oslo" {
		t.Errorf("arguments = %q (%v), want city Oslo", call.Function.Arguments, err)
	}
	params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("12°C, rain", call.ID))
	resp, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != fakes.DefaultReply || resp.Choices[0].FinishReason != "stop" {
		t.Errorf("after tool result: %q / %q", resp.Choices[0].Message.Content, resp.Choices[0].FinishReason)
	}
}

func TestEchoBackendAndErrors(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	client := openaiClient(g, bobKey)
	ctx := context.Background()

	resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "echo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("ping through the gateway")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "ping through the gateway" {
		t.Errorf("echo reply = %q", got)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
		Model: "echo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("one two three four")},
	})
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil || acc.Choices[0].Message.Content != "one two three four" {
		t.Errorf("echo stream = %q, %v", acc.Choices[0].Message.Content, err)
	}

	apiStatus := func(err error) (int, string) {
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("want *openai.Error, got %T %v", err, err)
		}
		return apiErr.StatusCode, apiErr.Message
	}
	// bob may use echo and llama only.
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "oa", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if st, msg := apiStatus(err); st != http.StatusForbidden || !strings.Contains(msg, "oa") {
		t.Errorf("disallowed alias: %d %q", st, msg)
	}
	_, err = client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "nope", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if st, msg := apiStatus(err); st != http.StatusNotFound || !strings.Contains(msg, "nope") {
		t.Errorf("unknown alias: %d %q", st, msg)
	}
	bad := openaiClient(g, "sk-wrong-key-000000")
	_, err = bad.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "echo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")},
	})
	if st, _ := apiStatus(err); st != http.StatusUnauthorized {
		t.Errorf("bad key: %d", st)
	}

	for _, tc := range []struct {
		name, body string
		status     int
		contains   string
	}{
		{"malformed JSON", `{"model":"echo",`, 400, "JSON"},
		{"missing model", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model"},
		{"missing messages", `{"model":"echo"}`, 400, "messages"},
	} {
		st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, tc.body)
		var e struct {
			Error struct {
				Message string  `json:"message"`
				Type    string  `json:"type"`
				Param   *string `json:"param"`
				Code    *string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal(body, &e); err != nil || st != tc.status || !strings.Contains(e.Error.Message, tc.contains) || e.Error.Type == "" {
			t.Errorf("%s: %d %s", tc.name, st, body)
		}
	}
	// /chat/completions without /v1 works too, and GET /v1/models lists bob's aliases.
	st, _, body := g.do(t, "POST", "/chat/completions", bobKey, `{"model":"echo","messages":[{"role":"user","content":"short path"}]}`)
	if st != 200 || !strings.Contains(string(body), "short path") {
		t.Errorf("/chat/completions: %d %s", st, body)
	}
	models, err := client.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Data {
		ids = append(ids, m.ID)
	}
	if strings.Join(ids, ",") != "llama,echo" {
		t.Errorf("bob's models = %v, want [llama echo]", ids)
	}
}

func TestUpstreamFailures(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Status: http.StatusTooManyRequests})
	closed := freePort(t) // nothing listens here
	models := u.modelsYAML()
	models = strings.Replace(models, "model_aliases:", `  - model_name: down
    proxy_params:
      model: ollama/llama-fake
      api_base: http://127.0.0.1:`+strconv.Itoa(closed)+`
model_aliases:`, 1)
	g := startGateway(t, gatewayConfig{models: models})

	start := time.Now()
	st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"down","messages":[{"role":"user","content":"hi"}]}`)
	if st != http.StatusBadGateway || !strings.Contains(string(body), `model \"down\"`) {
		t.Errorf("server not running: %d %s", st, body)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("a refused connection took %s; it must fail at once", took)
	}
	if strings.Contains(string(body), "127.0.0.1") {
		t.Errorf("error reveals the upstream address: %s", body)
	}
	st, _, body = g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"oa","messages":[{"role":"user","content":"hi"}]}`)
	if st != http.StatusTooManyRequests || !strings.Contains(string(body), "fake failure 429") {
		t.Errorf("upstream 429: %d %s", st, body)
	}
	st, _, body = g.do(t, "POST", "/v1/messages", aliceKey, `{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	var ae struct {
		Type  string `json:"type"`
		Error struct{ Type, Message string }
	}
	// Same family: the Anthropic upstream's error reaches the Messages
	// client unmodified, status and body (Claude Code's recovery matches
	// on the upstream's own wording), not re-rendered by the gateway.
	if err := json.Unmarshal(body, &ae); err != nil || st != 429 || ae.Type != "error" || ae.Error.Message != "fake failure 429" || !strings.Contains(string(body), `"request_id":"req_fake"`) {
		t.Errorf("anthropic-shaped upstream error: %d %s", st, body)
	}
}
