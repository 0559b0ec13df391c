package handlers

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// anthropicFake is an Anthropic Messages server that records what it got
// and answers with answer (status, body).
type anthropicFake struct {
	srv    *httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	hdrs   []http.Header
	urls   []string
}

func newAnthropicFake(t *testing.T, status int, answer string) *anthropicFake {
	t.Helper()
	f := &anthropicFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.bodies, f.hdrs, f.urls = append(f.bodies, b), append(f.hdrs, r.Header.Clone()), append(f.urls, r.URL.RequestURI())
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

const anthropicAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-up","content":[{"type":"text","text":"hi there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":7,"output_tokens":3}}`

// TestAnthropicPassthroughByteForByte: a Messages body reaches an
// Anthropic upstream byte for byte but for model (odd spacing, key order,
// escapes, cache_control and unknown fields included), with the client's
// anthropic-beta and anthropic-version; ?beta=true is dropped for a server
// that is not api.anthropic.com.
func TestAnthropicPassthroughByteForByte(t *testing.T) {
	f := newAnthropicFake(t, 200, anthropicAnswer)
	g, _ := testGateway(t, "model_list:\n"+kindEntry("claude-gw", "anthropic/claude-up", f.srv.URL), nil)
	body := `{ "max_tokens" : 64,"messages":[{"role":"user","content":[{"type":"text","text":"h\u00e9llo \"q\"","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],
  "model":"claude-gw",  "system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral"}}],"x_unknown":{"a":[1,2.50,1e3]},"thinking":{"type":"enabled","budget_tokens":1024}}`
	rr := post(g, alice, "/v1/messages?beta=true", body, "Anthropic-Version", "2023-06-01", "Anthropic-Beta", "claude-code-20250219,interleaved-thinking-2025-05-14")
	if rr.Code != 200 || rr.Body.String() != anthropicAnswer {
		t.Fatalf("answer %d %s", rr.Code, rr.Body)
	}
	want := strings.Replace(body, `"model":"claude-gw"`, `"model":"claude-up"`, 1)
	if got := string(f.bodies[0]); got != want {
		t.Errorf("upstream body differs beyond model:\n got %s\nwant %s", got, want)
	}
	h := f.hdrs[0]
	if h.Get("Anthropic-Beta") != "claude-code-20250219,interleaved-thinking-2025-05-14" || h.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("upstream headers: beta %q version %q", h.Get("Anthropic-Beta"), h.Get("Anthropic-Version"))
	}
	if f.urls[0] != "/v1/messages" {
		t.Errorf("upstream URL %q: ?beta=true must be dropped for a server other than api.anthropic.com", f.urls[0])
	}
	// Other query parameters still go through.
	post(g, alice, "/v1/messages?beta=true&x=1", body, "Anthropic-Version", "2023-06-01")
	if f.urls[1] != "/v1/messages?x=1" {
		t.Errorf("upstream URL %q, want /v1/messages?x=1", f.urls[1])
	}
}

// TestAnthropicUpstreamErrorUnmodified: an Anthropic upstream's error
// reaches a Messages client with its status and body unchanged (Claude
// Code's recovery matches on the wording), while an OpenAI client gets it
// in its own family.
func TestAnthropicUpstreamErrorUnmodified(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
	}{
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"},"request_id":"req_011"}`},
		{529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
		{413, `{"type":"error","error":{"type":"request_too_large","message":"Request exceeds the maximum allowed number of bytes."}}`},
	} {
		f := newAnthropicFake(t, tc.status, tc.body)
		g, _ := testGateway(t, "model_list:\n"+kindEntry("claude-gw", "anthropic/claude-up", f.srv.URL), nil)
		rr := post(g, alice, "/v1/messages", fmt.Sprintf(messagesBody, "claude-gw", false), "Anthropic-Version", "2023-06-01")
		if rr.Code != tc.status || rr.Body.String() != tc.body {
			t.Errorf("Messages client got %d %s, want %d %s", rr.Code, rr.Body, tc.status, tc.body)
		}
		rr = post(g, alice, "/v1/chat/completions", chatBody("claude-gw", false))
		if rr.Code != tc.status || !strings.Contains(rr.Body.String(), `"error":{"message":"model \"claude-gw\": upstream returned`) {
			t.Errorf("chat client got %d %s", rr.Code, rr.Body)
		}
	}
}

// decodeBedrockStream reads an AWS event stream with the SDK's decoder
// and returns each chunk's Anthropic event.
func decodeBedrockStream(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(b)
	var out []map[string]any
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatalf("event stream: %v", err)
		}
		if v := msg.Headers.Get(":message-type"); v == nil || v.String() != "event" {
			t.Fatalf("message type %v: %s", v, msg.Payload)
		}
		if v := msg.Headers.Get(":event-type"); v == nil || v.String() != "chunk" {
			t.Fatalf("event type %v", v)
		}
		var chunk struct {
			Bytes string `json:"bytes"`
		}
		if err := json.Unmarshal(msg.Payload, &chunk); err != nil {
			t.Fatalf("payload %s: %v", msg.Payload, err)
		}
		raw, err := base64.StdEncoding.DecodeString(chunk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("chunk %s: %v", raw, err)
		}
		out = append(out, ev)
	}
	return out
}

// TestBedrockIngressToChatUpstream: Claude Code's Bedrock calls, by a
// cross-region Bedrock id mapped through model_aliases, reach a chat-only
// upstream through the hub; the stream comes back as Bedrock frames it.
func TestBedrockIngressToChatUpstream(t *testing.T) {
	up := newFakeUpstream(t, "chat", nil)
	g, obs := testGateway(t, "model_list:\n"+entry("coder", up.srv.URL)+"model_aliases:\n  \"claude-sonnet-4-5*\": coder\n", nil)
	body := `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["interleaved-thinking-2025-05-14"],"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	id := url_("us.anthropic.claude-sonnet-4-5-20250929-v1:0")

	rr := post(g, alice, "/model/"+id+"/invoke-with-response-stream", body)
	if rr.Code != 200 || rr.Header().Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("stream: %d %v %s", rr.Code, rr.Header(), rr.Body)
	}
	evs := decodeBedrockStream(t, rr.Body.Bytes())
	var types []string
	var text string
	for _, ev := range evs {
		types = append(types, ev["type"].(string))
		if d, ok := ev["delta"].(map[string]any); ok && d["type"] == "text_delta" {
			text += d["text"].(string)
		}
	}
	if types[0] != "message_start" || types[len(types)-1] != "message_stop" || text != reply("chat") {
		t.Errorf("events %v, text %q", types, text)
	}

	rr = post(g, alice, "/model/"+id+"/invoke", body)
	var msg struct {
		Type    string `json:"type"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &msg) != nil || msg.Type != "message" || msg.Content[0].Text != reply("chat") {
		t.Errorf("invoke: %d %s", rr.Code, rr.Body)
	}
	recs := obs.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for _, r := range recs {
		if r.Endpoint != ledger.EndpointBedrockInvoke || r.Alias != "coder" || r.Outcome != ledger.OutcomeOK {
			t.Errorf("record %+v", r)
		}
	}
	if !recs[0].Stream || recs[1].Stream {
		t.Errorf("stream flags %v %v", recs[0].Stream, recs[1].Stream)
	}

	// CountTokens counts the InvokeModel body it wraps, for free.
	count := `{"input":{"invokeModel":{"body":"` + base64.StdEncoding.EncodeToString([]byte(body)) + `"}}}`
	rr = post(g, alice, "/model/"+id+"/count-tokens", count)
	var n struct {
		InputTokens int `json:"inputTokens"`
	}
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &n) != nil || n.InputTokens < 1 {
		t.Errorf("count-tokens: %d %s", rr.Code, rr.Body)
	}
	rr = post(g, alice, "/model/"+id+"/count-tokens", `{"input":{}}`)
	if rr.Code != 400 || rr.Header().Get("X-Amzn-Errortype") != "ValidationException" {
		t.Errorf("bad count-tokens: %d %s", rr.Code, rr.Body)
	}
	if len(obs.Records()) != 2 {
		t.Errorf("counting made records: %d", len(obs.Records()))
	}

	// An unknown model is a Bedrock-shaped 404.
	rr = post(g, alice, "/model/"+url_("amazon.nova-pro-v1:0")+"/invoke", body)
	if rr.Code != 404 || rr.Header().Get("X-Amzn-Errortype") != "ResourceNotFoundException" || !strings.HasPrefix(rr.Body.String(), `{"message":"model \"amazon.nova-pro-v1:0\" is not configured`) {
		t.Errorf("unknown model: %d %v %s", rr.Code, rr.Header(), rr.Body)
	}
	// A bad body is a ValidationException.
	rr = post(g, alice, "/model/"+id+"/invoke", `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64}`)
	if rr.Code != 400 || rr.Header().Get("X-Amzn-Errortype") != "ValidationException" || !strings.Contains(rr.Body.String(), "messages") {
		t.Errorf("bad body: %d %v %s", rr.Code, rr.Header(), rr.Body)
	}
}

func url_(id string) string { return strings.ReplaceAll(id, ":", "%3A") }

// TestBedrockIngressToAnthropicUpstream: to an Anthropic upstream the
// body's betas become anthropic-beta, anthropic_version goes, the model
// is the deployment's, and the rest is the client's bytes.
func TestBedrockIngressToAnthropicUpstream(t *testing.T) {
	f := newAnthropicFake(t, 200, anthropicAnswer)
	g, _ := testGateway(t, "model_list:\n"+kindEntry("claude-sonnet-4-5-20250929", "anthropic/claude-up", f.srv.URL), nil)
	body := `{"anthropic_version":"bedrock-2023-05-31","anthropic_beta":["context-1m-2025-08-07","interleaved-thinking-2025-05-14"],"max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	rr := post(g, alice, "/model/"+url_("global.anthropic.claude-sonnet-4-5-20250929-v1:0")+"/invoke", body)
	if rr.Code != 200 || rr.Body.String() != anthropicAnswer {
		t.Fatalf("%d %s", rr.Code, rr.Body)
	}
	if got, want := string(f.bodies[0]), `{"model":"claude-up","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`; got != want {
		t.Errorf("upstream body %s, want %s", got, want)
	}
	if h := f.hdrs[0]; h.Get("Anthropic-Beta") != "context-1m-2025-08-07,interleaved-thinking-2025-05-14" || h.Get("Anthropic-Version") != "2023-06-01" {
		t.Errorf("upstream headers %v", h)
	}
}

// TestVertexIngress: rawPredict, streamRawPredict (plain SSE) and
// count-tokens:rawPredict by a Vertex model id, to a chat-only upstream.
func TestVertexIngress(t *testing.T) {
	up := newFakeUpstream(t, "chat", nil)
	g, obs := testGateway(t, "model_list:\n"+entry("claude-sonnet-4-5-20250929", up.srv.URL), nil)
	prefix := "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/"
	body := `{"anthropic_version":"vertex-2023-10-16","max_tokens":64,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`

	rr := post(g, alice, prefix+"claude-sonnet-4-5@20250929:streamRawPredict", fmt.Sprintf(body, true))
	if rr.Code != 200 || !strings.HasPrefix(rr.Header().Get("Content-Type"), "text/event-stream") ||
		!strings.Contains(rr.Body.String(), "event: message_stop") || !strings.Contains(rr.Body.String(), reply("chat")) {
		t.Fatalf("streamRawPredict: %d %v %s", rr.Code, rr.Header(), rr.Body)
	}
	rr = post(g, alice, prefix+"claude-sonnet-4-5@20250929:rawPredict", fmt.Sprintf(body, false))
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"type":"message"`) {
		t.Fatalf("rawPredict: %d %s", rr.Code, rr.Body)
	}
	rr = post(g, alice, prefix+"count-tokens:rawPredict", `{"anthropic_version":"vertex-2023-10-16","model":"claude-sonnet-4-5@20250929","messages":[{"role":"user","content":"hello there"}]}`)
	if rr.Code != 200 || !strings.Contains(rr.Body.String(), `"input_tokens"`) {
		t.Fatalf("count-tokens: %d %s", rr.Code, rr.Body)
	}
	rr = post(g, alice, prefix+"claude-opus-4@20250514:rawPredict", fmt.Sprintf(body, false))
	if rr.Code != 404 || !strings.Contains(rr.Body.String(), `"type":"not_found_error"`) {
		t.Errorf("unknown model: %d %s", rr.Code, rr.Body)
	}
	n := 0
	for _, r := range obs.Records() {
		if r.Endpoint == ledger.EndpointVertexRawPredict && r.Alias == "claude-sonnet-4-5-20250929" && r.Outcome == ledger.OutcomeOK {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d vertex_raw_predict records, want 2: %+v", n, obs.Records())
	}
}

// TestCloudIngressCompressedBodies: a Bedrock or Vertex envelope sent
// with Content-Encoding gzip, deflate or zstd is decoded by the same
// bounded reader as every body: served when it fits, a 413 when it
// inflates past max_request_body (in the envelope's error shape), and the
// body memory is all given back after either.
func TestCloudIngressCompressedBodies(t *testing.T) {
	up := newFakeUpstream(t, "chat", nil)
	g, _ := testGateway(t, "model_list:\n"+entry("claude-sonnet-4-5-20250929", up.srv.URL), func(o *GatewayOptions) { o.MaxRequestBody = 1 << 20 })
	bedrock := "/model/" + url_("global.anthropic.claude-sonnet-4-5-20250929-v1:0") + "/invoke"
	vertex := "/v1/projects/p1/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"
	body := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`)
	bomb := []byte(`{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[],"pad":"` + strings.Repeat(" ", 8<<20) + `"}`)
	send := func(path, enc string, b []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(compress(t, enc, b)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Content-Encoding", enc)
		req = req.WithContext(policy.WithIdentity(req.Context(), alice))
		rec := httptest.NewRecorder()
		g.ServeHTTP(rec, req)
		return rec
	}
	for _, path := range []string{bedrock, vertex} {
		for _, enc := range []string{"gzip", "deflate", "zstd"} {
			if rec := send(path, enc, body); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), reply("chat")) {
				t.Fatalf("%s %s: %d %s", path, enc, rec.Code, rec.Body)
			}
			if rec := send(path, enc, bomb); rec.Code != http.StatusRequestEntityTooLarge {
				t.Fatalf("%s %s bomb: %d %s", path, enc, rec.Code, rec.Body)
			}
		}
	}
	if used, _, _ := g.bodyMem.stats(); used != 0 {
		t.Errorf("%d bytes of body memory still held after the requests", used)
	}
}
