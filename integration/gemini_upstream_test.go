package integration

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestGeminiUpstreamNative: a gemini/ deployment is called on Google's
// native API (x-goog-api-key, :generateContent, :streamGenerateContent
// ?alt=sse) from every client family: OpenAI chat (text, stream, a tool
// round trip that keeps the call's thought signature), Anthropic Messages,
// the Responses API and the Gemini API itself (passed through). Usage
// keeps Gemini's cached and thought tokens.
func TestGeminiUpstreamNative(t *testing.T) {
	rec := &fakes.Recorder{}
	up := httptest.NewServer(fakes.Gemini(fakes.Options{}, rec))
	t.Cleanup(up.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: gem
    proxy_params:
      model: gemini/gemini-3-fake
      api_base: %s
      api_key: %s
`, up.URL, fakes.GeminiAPIKey)})
	ctx := context.Background()
	oc := openaiClient(g, aliceKey)
	wantPrompt, wantCompletion := int64(fakes.GeminiPromptTokens), int64(fakes.GeminiCandidatesTokens+fakes.GeminiThoughtsTokens)

	t.Run("openai", func(t *testing.T) {
		resp, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gem",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Say hello")}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != fakes.DefaultReply || resp.Choices[0].FinishReason != "stop" ||
			resp.Usage.PromptTokens != wantPrompt || resp.Usage.CompletionTokens != wantCompletion ||
			resp.Usage.PromptTokensDetails.CachedTokens != fakes.GeminiCachedTokens {
			t.Errorf("answer %+v usage %+v", resp.Choices[0], resp.Usage)
		}
		last := rec.Last()
		if last.Path != "/v1beta/models/gemini-3-fake:generateContent" || !strings.Contains(string(last.Body), `"systemInstruction":{"parts":[{"text":"Be brief."}]}`) {
			t.Errorf("upstream got %s %s", last.Path, last.Body)
		}
	})
	t.Run("openai-stream", func(t *testing.T) {
		stream := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{Model: "gem",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say hello")},
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}})
		var acc openai.ChatCompletionAccumulator
		for stream.Next() {
			acc.AddChunk(stream.Current())
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if acc.Choices[0].Message.Content != fakes.DefaultReply || acc.Usage.PromptTokens != wantPrompt || acc.Usage.CompletionTokens != wantCompletion {
			t.Errorf("streamed %q usage %+v", acc.Choices[0].Message.Content, acc.Usage)
		}
		if q := rec.Last().Query; q != "alt=sse" {
			t.Errorf("stream query %q", q)
		}
	})
	t.Run("openai-tool-round-trip", func(t *testing.T) {
		params := openai.ChatCompletionNewParams{Model: "gem",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("What's the weather in Oslo?")},
			Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{
				Name: fakes.WeatherToolName, Parameters: openai.FunctionParameters{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})}}
		resp, err := oc.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg := resp.Choices[0].Message
		if resp.Choices[0].FinishReason != "tool_calls" || len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Arguments != fakes.WeatherToolArguments ||
			!strings.Contains(msg.ToolCalls[0].RawJSON(), fakes.GeminiThoughtSignature) {
			t.Fatalf("tool call %+v", msg)
		}
		params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("12°C", msg.ToolCalls[0].ID))
		resp, err = oc.Chat.Completions.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Choices[0].Message.Content != fakes.DefaultReply {
			t.Errorf("after the tool: %q", resp.Choices[0].Message.Content)
		}
		// The fake refuses a call sent back without a signature; the
		// response names the call's function, as Gemini requires.
		body := string(rec.Last().Body)
		if !strings.Contains(body, `"thoughtSignature"`) || !strings.Contains(body, `"functionResponse":{"id":"`+msg.ToolCalls[0].ID+`","name":"get_weather","response":{"output":"12°C"}}`) {
			t.Errorf("second request %s", body)
		}
	})
	t.Run("anthropic", func(t *testing.T) {
		ac := anthropicClient(g, aliceKey, false)
		msg, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "gem", MaxTokens: 100,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))}})
		if err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) == 0 || msg.Content[0].Text != fakes.DefaultReply || msg.Usage.CacheReadInputTokens != fakes.GeminiCachedTokens {
			t.Errorf("message %+v", msg)
		}
	})
	t.Run("responses", func(t *testing.T) {
		resp, err := oc.Responses.New(ctx, responses.ResponseNewParams{Model: "gem",
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}})
		if err != nil {
			t.Fatal(err)
		}
		if resp.OutputText() != fakes.DefaultReply {
			t.Errorf("output %q", resp.OutputText())
		}
	})
	// count_tokens and countTokens are answered by Google's free
	// countTokens, which the fake answers with the number of words in the
	// texts and descriptions it was sent: system, messages and tools
	// reach it, translated, and no ledger record is written.
	t.Run("count-tokens", func(t *testing.T) {
		ac := anthropicClient(g, aliceKey, false)
		n, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{Model: "gem",
			System:   anthropic.MessageCountTokensParamsSystemUnion{OfString: anthropic.String("Be brief.")},
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello to Oslo"))},
			Tools: []anthropic.MessageCountTokensToolUnionParam{{OfTool: &anthropic.ToolParam{Name: fakes.WeatherToolName,
				Description: anthropic.String("Weather for a city"), InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"city": map[string]any{"type": "string"}}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		if n.InputTokens != 10 {
			t.Errorf("count_tokens = %d, want 10 (2 system + 4 message + 4 tool description words)", n.InputTokens)
		}
		if last := rec.Last(); last.Path != "/v1beta/models/gemini-3-fake:countTokens" || !strings.Contains(string(last.Body), `{"generateContentRequest":{"model":"models/gemini-3-fake",`) {
			t.Errorf("upstream got %s %s", last.Path, last.Body)
		}
		gc := geminiClient(t, g, aliceKey)
		res, err := gc.Models.CountTokens(ctx, "gem", genai.Text("Count these four words"), nil)
		if err != nil {
			t.Fatal(err)
		}
		if res.TotalTokens != 4 {
			t.Errorf("countTokens = %d, want 4", res.TotalTokens)
		}
	})
	t.Run("gemini-native", func(t *testing.T) {
		gc := geminiClient(t, g, aliceKey)
		cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{weatherDeclaration}}
		history := []*genai.Content{genai.NewContentFromText("What's the weather in Oslo?", genai.RoleUser)}
		resp, err := gc.Models.GenerateContent(ctx, "gem", history, cfg)
		if err != nil {
			t.Fatal(err)
		}
		calls := resp.FunctionCalls()
		if len(calls) != 1 || string(resp.Candidates[0].Content.Parts[0].ThoughtSignature) == "" {
			t.Fatalf("passed-through answer %+v", resp.Candidates[0].Content)
		}
		history = append(history, resp.Candidates[0].Content, genai.NewContentFromParts([]*genai.Part{genai.NewPartFromFunctionResponse(calls[0].Name, map[string]any{"output": "12°C"})}, genai.RoleUser))
		var text strings.Builder
		for chunk, err := range gc.Models.GenerateContentStream(ctx, "gem", history, cfg) {
			if err != nil {
				t.Fatal(err)
			}
			text.WriteString(chunk.Text())
		}
		if text.String() != fakes.DefaultReply {
			t.Errorf("streamed %q", text.String())
		}
	})

	n := 0
	for _, r := range g.ledgerRecords(t) {
		if r.Alias != "gem" || r.Status != 200 {
			continue
		}
		n++
		if r.InputTokens != fakes.GeminiPromptTokens-fakes.GeminiCachedTokens || r.CacheReadTokens != fakes.GeminiCachedTokens || r.OutputTokens != wantCompletion {
			t.Errorf("record %s: in %d cached %d out %d", r.Endpoint, r.InputTokens, r.CacheReadTokens, r.OutputTokens)
		}
	}
	if n != 8 {
		t.Errorf("%d records, want 8", n)
	}
}
