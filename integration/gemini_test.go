package integration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"google.golang.org/genai"

	"github.com/modelgate/modelgate/internal/fakes"
)

func geminiClient(t *testing.T, g *gateway, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: g.base}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var weatherDeclaration = &genai.Tool{FunctionDeclarations: []*genai.FunctionDeclaration{{
	Name: fakes.WeatherToolName, Description: "Current weather in a city",
	ParametersJsonSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"}},
}}}

// TestGeminiSDKAgainstEveryBackend drives the Gemini API with the official
// Go SDK (google.golang.org/genai) against every backend kind: text,
// stream, a function-call round trip, countTokens, the models list and
// errors in Google's shape.
func TestGeminiSDKAgainstEveryBackend(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	client := geminiClient(t, g, aliceKey)
	ctx := context.Background()
	system := &genai.GenerateContentConfig{SystemInstruction: genai.NewContentFromText("Be brief.", genai.RoleUser)}

	for _, alias := range []string{"oa", "claude", "llama", "echo"} {
		want := fakes.DefaultReply
		if alias == "echo" {
			want = "Say hello"
		}
		t.Run(alias+"/generate", func(t *testing.T) {
			resp, err := client.Models.GenerateContent(ctx, alias, genai.Text("Say hello"), system)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != want || resp.Candidates[0].FinishReason != genai.FinishReasonStop || resp.ModelVersion != answeredModel[alias] {
				t.Errorf("text %q finish %q model %q", resp.Text(), resp.Candidates[0].FinishReason, resp.ModelVersion)
			}
			u := resp.UsageMetadata
			if u == nil || u.PromptTokenCount == 0 || u.TotalTokenCount != u.PromptTokenCount+u.CandidatesTokenCount+u.ThoughtsTokenCount {
				t.Errorf("usage %+v", u)
			}
			if alias == "claude" && (u.PromptTokenCount != fakes.AnthropicInputTokens+fakes.AnthropicCacheRead+fakes.AnthropicCacheCreation ||
				u.CachedContentTokenCount != fakes.AnthropicCacheRead || u.CandidatesTokenCount != fakes.AnthropicOutputTokens) {
				t.Errorf("claude usage %+v", u)
			}
			if alias == "oa" && (u.PromptTokenCount != fakes.OpenAIPromptTokens || u.CachedContentTokenCount != fakes.OpenAICachedTokens) {
				t.Errorf("oa usage %+v", u)
			}
		})
		t.Run(alias+"/stream", func(t *testing.T) {
			var text strings.Builder
			var last *genai.GenerateContentResponse
			ids := map[string]bool{}
			for chunk, err := range client.Models.GenerateContentStream(ctx, alias, genai.Text("Say hello"), system) {
				if err != nil {
					t.Fatal(err)
				}
				text.WriteString(chunk.Text())
				ids[chunk.ResponseID] = true
				last = chunk
			}
			if text.String() != want {
				t.Errorf("streamed %q, want %q", text.String(), want)
			}
			if last == nil || len(last.Candidates) == 0 || last.Candidates[0].FinishReason != genai.FinishReasonStop || last.UsageMetadata == nil || last.UsageMetadata.TotalTokenCount == 0 {
				t.Errorf("last chunk %+v", last)
			}
			if len(ids) != 1 {
				t.Errorf("response ids %v, want one for the whole stream", ids)
			}
		})
		if alias == "echo" {
			continue
		}
		t.Run(alias+"/function-call-round-trip", func(t *testing.T) {
			cfg := &genai.GenerateContentConfig{Tools: []*genai.Tool{weatherDeclaration}}
			history := []*genai.Content{genai.NewContentFromText("What's the weather in Oslo?", genai.RoleUser)}
			var model *genai.Content
			var calls []*genai.FunctionCall
			for chunk, err := range client.Models.GenerateContentStream(ctx, alias, history, cfg) {
				if err != nil {
					t.Fatal(err)
				}
				calls = append(calls, chunk.FunctionCalls()...)
				if len(chunk.FunctionCalls()) > 0 {
					model = chunk.Candidates[0].Content
				}
			}
			if len(calls) != 1 || calls[0].Name != fakes.WeatherToolName || calls[0].Args["city"] != "Oslo" || calls[0].ID == "" {
				t.Fatalf("calls %+v", calls)
			}
			history = append(history, model, genai.NewContentFromParts([]*genai.Part{{FunctionResponse: &genai.FunctionResponse{
				ID: calls[0].ID, Name: calls[0].Name, Response: map[string]any{"output": "12°C"}}}}, genai.RoleUser))
			resp, err := client.Models.GenerateContent(ctx, alias, history, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text() != fakes.DefaultReply {
				t.Errorf("after the function response: %q", resp.Text())
			}
		})
	}
	// What the upstreams were sent for the tool's answer.
	if last := string(u.anthropicRec.Last().Body); !strings.Contains(last, `"tool_result"`) || !strings.Contains(last, "12°C") {
		t.Errorf("anthropic got %s", last)
	}
	if last := string(u.openaiRec.Last().Body); !strings.Contains(last, `"role":"tool"`) || !strings.Contains(last, `"tool_call_id":"call_fake1"`) {
		t.Errorf("openai got %s", last)
	}

	t.Run("count-tokens", func(t *testing.T) {
		for _, alias := range []string{"claude", "echo"} {
			n, err := client.Models.CountTokens(ctx, alias, genai.Text("How many tokens is this?"), nil)
			if err != nil || n.TotalTokens == 0 {
				t.Errorf("%s: %+v %v", alias, n, err)
			}
		}
	})
	t.Run("models", func(t *testing.T) {
		m, err := client.Models.Get(ctx, "echo", nil)
		if err != nil || m.Name != "models/echo" {
			t.Errorf("get: %+v %v", m, err)
		}
		var names []string
		for m, err := range geminiClient(t, g, bobKey).Models.All(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			names = append(names, m.Name)
		}
		if strings.Join(names, ",") != "models/llama,models/echo" { // bob may use these two
			t.Errorf("listed %v", names)
		}
	})
	t.Run("errors", func(t *testing.T) {
		var ae genai.APIError
		_, err := client.Models.GenerateContent(ctx, "no-such-model", genai.Text("hi"), nil)
		if !errors.As(err, &ae) || ae.Code != http.StatusNotFound || ae.Status != "NOT_FOUND" {
			t.Errorf("unknown model: %v", err)
		}
		_, err = geminiClient(t, g, "wrong-key").Models.GenerateContent(ctx, "echo", genai.Text("hi"), nil)
		if !errors.As(err, &ae) || ae.Code != http.StatusUnauthorized || ae.Status != "UNAUTHENTICATED" {
			t.Errorf("bad key: %v", err)
		}
		_, err = geminiClient(t, g, bobKey).Models.GenerateContent(ctx, "oa", genai.Text("hi"), nil)
		if !errors.As(err, &ae) || ae.Code != http.StatusForbidden || ae.Status != "PERMISSION_DENIED" {
			t.Errorf("alias the key may not use: %v", err)
		}
		// Unserved API paths through the SDK: clean errors in Google's shape.
		_, err = client.Models.Delete(ctx, "echo", nil)
		if !errors.As(err, &ae) || ae.Code != http.StatusMethodNotAllowed || ae.Status != "UNIMPLEMENTED" {
			t.Errorf("DELETE a model: %v", err)
		}
		_, err = client.Caches.Get(ctx, "cachedContents/abc", nil)
		if !errors.As(err, &ae) || ae.Code != http.StatusNotFound || ae.Status != "NOT_FOUND" || !strings.Contains(ae.Message, "GET /v1beta/cachedContents/abc") {
			t.Errorf("an unserved path: %v", err)
		}
		_, err = client.Models.GenerateContent(ctx, "echo", []*genai.Content{}, nil)
		if !errors.As(err, &ae) || ae.Code != http.StatusBadRequest || ae.Status != "INVALID_ARGUMENT" {
			t.Errorf("no contents: %v", err)
		}
	})

	g.stop(t)
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint == "generate_content" && rec.Status == 200 {
			n++
		}
	}
	if n != 4*2+3*2 {
		t.Errorf("%d generate_content records, want %d", n, 4*2+3*2)
	}
}

// TestGeminiSDKModelsOnV1: the Go SDK on the /v1 API version (what
// @google/genai 3.x uses by default) lists and gets models in Google's
// shapes; on OpenAI's list shape the list came back empty and the model
// without a name.
func TestGeminiSDKModelsOnV1(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	ctx := context.Background()
	client, err := genai.NewClient(ctx, &genai.ClientConfig{APIKey: bobKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: g.base, APIVersion: "v1"}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := client.Models.Get(ctx, "echo", nil)
	if err != nil || m.Name != "models/echo" || len(m.SupportedActions) == 0 {
		t.Fatalf("get on v1: %+v %v", m, err)
	}
	var names []string
	for m, err := range client.Models.All(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
	}
	if strings.Join(names, ",") != "models/llama,models/echo" { // bob may use these two
		t.Fatalf("listed on v1: %v", names)
	}
	resp, err := client.Models.GenerateContent(ctx, "echo", genai.Text("Say hello"), nil)
	if err != nil || resp.Text() == "" {
		t.Fatalf("generate on v1: %v", err)
	}
}
