package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/modelgate/modelgate/internal/fakes"
)

func anthropicClient(g *gateway, key string, bearer bool) anthropic.Client {
	opts := []option.RequestOption{option.WithBaseURL(g.base), option.WithMaxRetries(0), option.WithRequestTimeout(20 * time.Second)}
	if bearer {
		opts = append(opts, option.WithAuthToken(key), option.WithAPIKey(""))
	} else {
		opts = append(opts, option.WithAPIKey(key))
	}
	return anthropic.NewClient(opts...)
}

// expectedAnthropicUsage is input/output as an Anthropic client sees them
// per the spec's usage mapping, for each alias.
var expectedAnthropicUsage = map[string][2]int64{
	"claude": {fakes.AnthropicInputTokens, fakes.AnthropicOutputTokens},
	"oa":     {fakes.OpenAIPromptTokens - fakes.OpenAICachedTokens, fakes.OpenAICompletionTokens},
	"llama":  {fakes.OllamaPromptEvalCount, fakes.OllamaEvalCount},
}

func TestAnthropicClientAgainstEveryBackend(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	ctx := context.Background()

	for _, alias := range []string{"claude", "oa", "llama"} {
		for _, bearer := range []bool{false, true} {
			client := anthropicClient(g, aliceKey, bearer)
			auth := "x-api-key"
			if bearer {
				auth = "bearer"
			}
			t.Run(alias+"/non-stream/"+auth, func(t *testing.T) {
				msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
					Model: anthropic.Model(alias), MaxTokens: 200,
					System:   []anthropic.TextBlockParam{{Text: "Be brief."}},
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(msg.Content) == 0 || msg.Content[0].Text != fakes.DefaultReply {
					t.Fatalf("content = %+v", msg.Content)
				}
				if msg.StopReason != anthropic.StopReasonEndTurn {
					t.Errorf("stop_reason = %q", msg.StopReason)
				}
				want := expectedAnthropicUsage[alias]
				if msg.Usage.InputTokens != want[0] || msg.Usage.OutputTokens != want[1] {
					t.Errorf("usage = %d/%d, want %d/%d", msg.Usage.InputTokens, msg.Usage.OutputTokens, want[0], want[1])
				}
			})
		}
		client := anthropicClient(g, aliceKey, false)
		t.Run(alias+"/stream", func(t *testing.T) {
			stream := client.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
				Model: anthropic.Model(alias), MaxTokens: 200,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Say hello"))},
			})
			var msg anthropic.Message
			events := 0
			for stream.Next() {
				if err := msg.Accumulate(stream.Current()); err != nil {
					t.Fatal(err)
				}
				events++
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if events < 5 || len(msg.Content) != 1 || msg.Content[0].Text != fakes.DefaultReply {
				t.Fatalf("%d events, content %+v", events, msg.Content)
			}
			if msg.StopReason != anthropic.StopReasonEndTurn {
				t.Errorf("stop_reason = %q", msg.StopReason)
			}
			if want := expectedAnthropicUsage[alias]; msg.Usage.OutputTokens != want[1] {
				t.Errorf("output tokens = %d, want %d", msg.Usage.OutputTokens, want[1])
			}
		})
		for _, streaming := range []bool{false, true} {
			name := alias + "/tool-use"
			if streaming {
				name += "-stream"
			}
			t.Run(name, func(t *testing.T) { anthropicToolRoundTrip(t, client, alias, streaming) })
		}
	}

	t.Run("echo and model_aliases", func(t *testing.T) {
		client := anthropicClient(g, aliceKey, false)
		msg, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: "echo", MaxTokens: 50,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("echo me"))},
		})
		if err != nil || msg.Content[0].Text != "echo me" {
			t.Fatalf("echo: %v %+v", err, msg)
		}
		// claude-sonnet-* is mapped to oa in the test models file.
		before := u.openaiRec.Count()
		msg, err = client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: "claude-sonnet-4-5-20250929", MaxTokens: 50,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
		})
		if err != nil || u.openaiRec.Count() != before+1 || msg.Content[0].Text != fakes.DefaultReply {
			t.Fatalf("model_aliases: %v, openai requests %d → %d", err, before, u.openaiRec.Count())
		}
	})

	t.Run("pass-through headers", func(t *testing.T) {
		client := anthropicClient(g, aliceKey, false)
		var hdr http.Header
		_, err := client.Messages.New(ctx, anthropic.MessageNewParams{
			Model: "claude", MaxTokens: 50,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
		}, option.WithHeader("anthropic-beta", "prompt-caching-2024-07-31"), option.WithResponseInto(new(*http.Response)), option.WithMiddleware(
			func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
				resp, err := next(r)
				if resp != nil {
					hdr = resp.Header
				}
				return resp, err
			}))
		if err != nil {
			t.Fatal(err)
		}
		last := u.anthropicRec.Last()
		if last.Header.Get("Anthropic-Beta") != "prompt-caching-2024-07-31" || last.Header.Get("X-Api-Key") != "upstream-anthropic-secret" {
			t.Errorf("upstream headers: beta %q, key is deployment's: %v", last.Header.Get("Anthropic-Beta"), last.Header.Get("X-Api-Key") == "upstream-anthropic-secret")
		}
		var body struct{ Model string }
		_ = json.Unmarshal(last.Body, &body)
		if body.Model != "claude-fake" {
			t.Errorf("upstream model = %q", body.Model)
		}
		if hdr.Get("Request-Id") != "req_fake_anthropic" {
			t.Errorf("request-id not relayed: %q", hdr.Get("Request-Id"))
		}
	})

	t.Run("errors in Anthropic shape", func(t *testing.T) {
		client := anthropicClient(g, "sk-not-a-key-000", false)
		_, err := client.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude", MaxTokens: 5,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 401 || !strings.Contains(apiErr.RawJSON(), `"authentication_error"`) {
			t.Errorf("bad key: %v", err)
		}
		st, _, body := g.do(t, "POST", "/v1/messages?beta=true", aliceKey, `{"model":"nope","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
		if st != 404 || !strings.Contains(string(body), `"type":"error"`) || !strings.Contains(string(body), `"not_found_error"`) {
			t.Errorf("unknown model: %d %s", st, body)
		}
		st, _, _ = g.do(t, "HEAD", "/", "", "")
		if st != 200 {
			t.Errorf("HEAD / = %d", st)
		}
	})
}

func anthropicToolRoundTrip(t *testing.T, client anthropic.Client, alias string, streaming bool) {
	ctx := context.Background()
	params := anthropic.MessageNewParams{
		Model: anthropic.Model(alias), MaxTokens: 300,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("What is the weather in Oslo?"))},
		Tools: []anthropic.ToolUnionParam{anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
			Properties: map[string]any{"city": map[string]any{"type": "string"}}, Required: []string{"city"},
		}, fakes.WeatherToolName)},
	}
	var msg anthropic.Message
	if streaming {
		stream := client.Messages.NewStreaming(ctx, params)
		for stream.Next() {
			if err := msg.Accumulate(stream.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
	} else {
		m, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		msg = *m
	}
	if msg.StopReason != anthropic.StopReasonToolUse {
		t.Errorf("stop_reason = %q, want tool_use", msg.StopReason)
	}
	var use *anthropic.ToolUseBlock
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			tu := b.AsToolUse()
			use = &tu
		}
	}
	if use == nil {
		t.Fatalf("no tool_use block in %+v", msg.Content)
	}
	var input map[string]string
	if err := json.Unmarshal(use.Input, &input); err != nil || input["city"] != "Oslo" || use.Name != fakes.WeatherToolName || use.ID == "" {
		t.Fatalf("tool_use = %+v (%s)", use, use.Input)
	}
	params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "12°C, rain", false)))
	final, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if final.StopReason != anthropic.StopReasonEndTurn || final.Content[0].Text != fakes.DefaultReply {
		t.Errorf("after tool_result: %q %+v", final.StopReason, final.Content)
	}
}
