package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/modelgate/modelgate/internal/fakes"
)

// weatherTool is the function the fakes call when asked about the weather.
func weatherTool() responses.ToolUnionParam {
	return responses.ToolParamOfFunction(fakes.WeatherToolName, map[string]any{
		"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}, "required": []string{"city"},
	}, false)
}

// TestResponsesClientAgainstEveryBackend drives /v1/responses with the
// official client, as Codex and the SDKs use it, against every backend
// kind: plain and streamed text, and a tool round trip.
func TestResponsesClientAgainstEveryBackend(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	client := openaiClient(g, aliceKey)
	ctx := context.Background()

	for _, alias := range []string{"oa", "claude", "llama", "echo"} {
		want := fakes.DefaultReply
		if alias == "echo" {
			want = "Say hello"
		}
		t.Run(alias+"/non-stream", func(t *testing.T) {
			resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
				Model:        alias,
				Instructions: openai.String("Be brief."),
				Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
			}, option.WithHeader("session-id", "codex-session-"+alias))
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.OutputText(); got != want {
				t.Errorf("output text = %q, want %q", got, want)
			}
			if resp.Status != responses.ResponseStatusCompleted || resp.Model != answeredModel[alias] || !strings.HasPrefix(resp.ID, "resp_") {
				t.Errorf("status %q model %q id %q", resp.Status, resp.Model, resp.ID)
			}
			if ex, ok := expectedUsage[alias]; ok && (resp.Usage.InputTokens != ex[0] || resp.Usage.OutputTokens != ex[1]) {
				t.Errorf("usage %d/%d, want %d/%d", resp.Usage.InputTokens, resp.Usage.OutputTokens, ex[0], ex[1])
			}
		})
		t.Run(alias+"/stream", func(t *testing.T) {
			stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
				Model: alias,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")},
			})
			var text strings.Builder
			var types []string
			var final responses.Response
			for stream.Next() {
				ev := stream.Current()
				types = append(types, ev.Type)
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					final = ev.AsResponseCompleted().Response
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if text.String() != want || final.OutputText() != want {
				t.Errorf("streamed %q, final %q, want %q", text.String(), final.OutputText(), want)
			}
			if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
				t.Errorf("event order %v", types)
			}
			if final.Usage.TotalTokens == 0 {
				t.Errorf("completed carries no usage: %+v", final.Usage)
			}
		})
		if alias == "echo" {
			continue
		}
		t.Run(alias+"/tool-round-trip", func(t *testing.T) {
			params := responses.ResponseNewParams{
				Model: alias,
				Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What's the weather in Oslo?")},
				Tools: []responses.ToolUnionParam{weatherTool()},
				Store: openai.Bool(false),
			}
			stream := client.Responses.NewStreaming(ctx, params)
			var call responses.ResponseFunctionToolCall
			for stream.Next() {
				if ev := stream.Current(); ev.Type == "response.output_item.done" && ev.Item.Type == "function_call" {
					call = ev.Item.AsFunctionCall()
				}
			}
			if err := stream.Err(); err != nil {
				t.Fatal(err)
			}
			if call.Name != fakes.WeatherToolName || call.Arguments != fakes.WeatherToolArguments || call.CallID == "" {
				t.Fatalf("call = %+v", call)
			}
			params.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
				responses.ResponseInputItemParamOfMessage("What's the weather in Oslo?", responses.EasyInputMessageRoleUser),
				responses.ResponseInputItemParamOfFunctionCall(call.Arguments, call.CallID, call.Name),
				{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{CallID: openai.String(call.CallID),
					Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String("12°C")}}},
			}}
			resp, err := client.Responses.New(ctx, params)
			if err != nil {
				t.Fatal(err)
			}
			if resp.OutputText() != fakes.DefaultReply {
				t.Errorf("after the tool: %q", resp.OutputText())
			}
		})
	}

	// Every request is in the ledger as a responses request, with Codex's
	// session header as its session.
	g.stop(t)
	n, sessions := 0, 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint != "responses" {
			continue
		}
		n++
		if rec.Outcome != "ok" || rec.Status != 200 {
			t.Errorf("record %+v", rec)
		}
		if rec.SessionID == "codex-session-"+rec.Alias {
			sessions++
		}
		if rec.Alias == "claude" && rec.InputTokens != fakes.AnthropicInputTokens {
			t.Errorf("claude record usage %+v", rec)
		}
	}
	if sessions != 4 {
		t.Errorf("%d records carry the session-id header's session, want 4", sessions)
	}
	if n != 4*2+3*2 {
		t.Errorf("%d responses records, want %d", n, 4*2+3*2)
	}
}

// TestResponsesBadInputAndUpstreamErrors: a client's mistake is a 400 in
// OpenAI's shape naming the param; an upstream failure is an HTTP error
// before the stream starts.
func TestResponsesBadInputAndUpstreamErrors(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Status: http.StatusBadRequest})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	client := openaiClient(g, aliceKey)
	ctx := context.Background()

	cases := []struct{ body, param string }{
		{`{"model":"echo","input":[{"type":"hologram"}]}`, "input[0].type"},
		{`{"model":"echo","input":"hi","previous_response_id":"resp_unknown"}`, "previous_response_id"},
		{`{"model":"echo","input":"hi","tools":[{"type":"telepathy"}]}`, "tools[0].type"},
		{`{"model":"echo","input":"hi","stream":"yes"}`, "stream"},
		{`{"model":"echo","input":"hi","max_output_tokens":"lots"}`, "max_output_tokens"},
	}
	for _, c := range cases {
		status, _, body := g.do(t, "POST", "/v1/responses", aliceKey, c.body)
		var e struct {
			Error struct {
				Param *string `json:"param"`
				Type  string  `json:"type"`
			} `json:"error"`
		}
		if status != 400 || json.Unmarshal(body, &e) != nil || e.Error.Param == nil || *e.Error.Param != c.param || e.Error.Type != "invalid_request_error" {
			t.Errorf("%s: %d %s, want a 400 naming %s", c.body, status, body, c.param)
		}
	}

	_, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "oa", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "fake failure 400") {
		t.Fatalf("upstream 400: %v", err)
	}
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "claude", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	for stream.Next() {
	}
	if !errors.As(stream.Err(), &apiErr) || apiErr.StatusCode != 400 {
		t.Fatalf("streamed upstream 400: %v", stream.Err())
	}
	if strings.Contains(g.stderr.String(), "upstream-anthropic-secret") {
		t.Error("upstream key in the gateway's log")
	}
}

// TestResponsesNativeUpstream: an upstream that serves /responses gets
// the request as sent (model swapped) and its events are relayed; usage
// is read from response.completed.
func TestResponsesNativeUpstream(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: strings.Replace(u.modelsYAML(), "model_aliases:", fmt.Sprintf(`  - model_name: native
    proxy_params:
      model: openai/fake-gpt
      api_base: %s/v1
      api_key: upstream-openai-secret
      responses_api: native
`, u.openai.URL)+"model_aliases:", 1)})
	client := openaiClient(g, aliceKey)
	ctx := context.Background()

	resp, err := client.Responses.New(ctx, responses.ResponseNewParams{
		Model: "native", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}})
	if err != nil {
		t.Fatal(err)
	}
	if resp.OutputText() != fakes.DefaultReply || resp.ID != fakes.ResponsesID {
		t.Errorf("non-stream: %q %q", resp.OutputText(), resp.ID)
	}
	last := u.openaiRec.Last()
	if last.Path != "/v1/responses" || !strings.Contains(string(last.Body), `"model":"fake-gpt"`) {
		t.Errorf("upstream got %s %s", last.Path, last.Body)
	}
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{
		Model: "native", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is the weather in Oslo?")},
		Tools: []responses.ToolUnionParam{weatherTool()}})
	var call responses.ResponseFunctionToolCall
	var seqs []int64
	for stream.Next() {
		ev := stream.Current()
		seqs = append(seqs, ev.SequenceNumber)
		if ev.Type == "response.output_item.done" {
			call = ev.Item.AsFunctionCall()
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if call.Name != fakes.WeatherToolName || call.Arguments != fakes.WeatherToolArguments {
		t.Errorf("call %+v", call)
	}
	for i, s := range seqs {
		if s != int64(i) {
			t.Fatalf("sequence numbers %v", seqs)
		}
	}
	g.stop(t)
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Alias != "native" {
			continue
		}
		n++
		if rec.Endpoint != "responses" || rec.InputTokens != fakes.OpenAIPromptTokens-fakes.OpenAICachedTokens ||
			rec.CacheReadTokens != fakes.OpenAICachedTokens || rec.OutputTokens != fakes.OpenAICompletionTokens {
			t.Errorf("record %+v", rec)
		}
	}
	if n != 2 {
		t.Errorf("%d records for native, want 2", n)
	}
}

// TestResponsesInputTokens: the free count answers in the Responses
// shape for every backend kind, Anthropic's own count endpoint included.
func TestResponsesInputTokens(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	body := `{"model":"%s","instructions":"Be brief.","input":[{"role":"user","content":"Count these words for me please"}],
		"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}]}`
	for _, alias := range []string{"oa", "claude", "llama", "echo"} {
		status, _, out := g.do(t, "POST", "/v1/responses/input_tokens", aliceKey, fmt.Sprintf(body, alias))
		var c struct {
			Object      string `json:"object"`
			InputTokens int    `json:"input_tokens"`
		}
		if status != 200 || json.Unmarshal(out, &c) != nil || c.Object != "response.input_tokens" || c.InputTokens < 10 {
			t.Errorf("%s: %d %s", alias, status, out)
		}
	}
	last := u.anthropicRec.Last()
	if last.Path != "/v1/messages/count_tokens" || !strings.Contains(string(last.Body), `"system":"Be brief."`) || strings.Contains(string(last.Body), "max_tokens") {
		t.Errorf("Anthropic count request %s %s", last.Path, last.Body)
	}
	if status, _, out := g.do(t, "POST", "/v1/responses/input_tokens", aliceKey, `{"model":"echo","input":[{"type":"nope"}]}`); status != 400 || !strings.Contains(string(out), `"param":"input[0].type"`) {
		t.Errorf("bad input: %d %s", status, out)
	}
}

// TestResponsesMidStreamFailure: an upstream that breaks after the client
// has events gets the protocol's ending, an error event (nested and flat)
// then response.failed, which the official client turns into an error;
// the request is recorded as failed and counted under its endpoint.
func TestResponsesMidStreamFailure(t *testing.T) {
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"the model is overloaded\",\"type\":\"server_error\"}}\n\n")
	}))
	t.Cleanup(broken.Close)
	g := startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: flaky
    proxy_params:
      model: openai/flaky
      api_base: %s/v1
      api_key: upstream-flaky-secret
`, broken.URL), siteExtra: "handle /metrics {\n\t\tmetrics\n\t}"})

	status, _, body := g.do(t, "POST", "/v1/responses", aliceKey, `{"model":"flaky","input":"hi","stream":true}`)
	events := strings.Split(strings.TrimSpace(string(body)), "\n\n")
	if status != 200 || len(events) < 4 {
		t.Fatalf("%d %s", status, body)
	}
	errEv, last := events[len(events)-2], events[len(events)-1]
	if !strings.HasPrefix(errEv, "event: error\n") || !strings.Contains(errEv, "overloaded") ||
		!strings.Contains(errEv, `"error":{`) || !strings.Contains(errEv, `"code":"server_error"`) {
		t.Errorf("error event: %s", errEv)
	}
	if !strings.HasPrefix(last, "event: response.failed\n") || !strings.Contains(last, `"status":"failed"`) {
		t.Errorf("last event: %s", last)
	}
	if strings.Contains(string(body), "upstream-flaky-secret") {
		t.Error("upstream key in the stream")
	}

	client := openaiClient(g, aliceKey)
	stream := client.Responses.NewStreaming(context.Background(), responses.ResponseNewParams{
		Model: "flaky", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	for stream.Next() {
	}
	if stream.Err() == nil || !strings.Contains(stream.Err().Error(), "overloaded") {
		t.Errorf("the client saw no error: %v", stream.Err())
	}

	var metrics []byte
	for i := 0; i < 50; i++ {
		_, _, metrics = g.do(t, "GET", "/metrics", adminKey, "")
		if strings.Contains(string(metrics), `modelgate_requests_total{alias="flaky",endpoint="responses",provider="openai",status="5xx"} 2`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(string(metrics), `modelgate_requests_total{alias="flaky",endpoint="responses",provider="openai",status="5xx"} 2`) {
		t.Errorf("metrics lack the failed responses requests:\n%s", metrics)
	}
	g.stop(t)
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint != "responses" || rec.Outcome != "error" {
			t.Errorf("record %+v", rec)
		}
	}
}
