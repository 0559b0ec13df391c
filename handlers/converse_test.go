package handlers

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// TestConverseIngress: Bedrock's Converse and ConverseStream by a Bedrock
// model id mapped to an alias, served by the one request path: the answer
// in Converse's shape, the stream as AWS event-stream events, fallbacks
// taken, the key's model list and refusals in Bedrock's error shape, and
// bedrock_converse records; CountTokens of a Converse request.
func TestConverseIngress(t *testing.T) {
	broken := newFakeUpstream(t, "broken", statusAnswer(http.StatusInternalServerError, ""))
	up := newFakeUpstream(t, "chat", nil)
	g, obs := testGateway(t, "model_list:\n"+entry("coder", broken.srv.URL)+entry("backup", up.srv.URL)+
		"model_aliases:\n  \"claude-sonnet-4-5*\": coder\nrouter_settings:\n  fallbacks:\n    - coder: [backup]\n", nil)
	id := url_("us.anthropic.claude-sonnet-4-5-20250929-v1:0")
	body := `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":64}}`

	rr := post(g, alice, "/model/"+id+"/converse", body)
	var out struct {
		Output struct {
			Message struct {
				Role    string
				Content []struct{ Text string }
			}
		}
		StopReason string
		Usage      struct{ InputTokens, OutputTokens, TotalTokens int64 }
		Metrics    *struct{ LatencyMs int64 }
	}
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &out) != nil || out.Output.Message.Role != "assistant" ||
		out.Output.Message.Content[0].Text != reply("chat") || out.StopReason != "end_turn" || out.Metrics == nil {
		t.Fatalf("converse: %d %s", rr.Code, rr.Body)
	}

	rr = post(g, alice, "/model/"+id+"/converse-stream", body)
	if rr.Code != 200 || rr.Header().Get("Content-Type") != "application/vnd.amazon.eventstream" {
		t.Fatalf("stream: %d %v %s", rr.Code, rr.Header(), rr.Body)
	}
	var names []string
	var text string
	dec := eventstream.NewDecoder()
	for rd := strings.NewReader(rr.Body.String()); rd.Len() > 0; {
		msg, err := dec.Decode(rd, nil)
		if err != nil {
			t.Fatal(err)
		}
		if msg.Headers.Get(":message-type").String() != "event" {
			t.Fatalf("message %v %s", msg.Headers, msg.Payload)
		}
		name := msg.Headers.Get(":event-type").String()
		if len(names) == 0 || names[len(names)-1] != name {
			names = append(names, name)
		}
		var ev struct{ Delta struct{ Text string } }
		_ = json.Unmarshal(msg.Payload, &ev)
		text += ev.Delta.Text
	}
	if strings.Join(names, " ") != "messageStart contentBlockDelta contentBlockStop messageStop metadata" || text != reply("chat") {
		t.Errorf("events %v, text %q", names, text)
	}
	if broken.hits.Load() != 2 || up.hits.Load() != 2 {
		t.Errorf("fallback: broken %d, backup %d calls", broken.hits.Load(), up.hits.Load())
	}
	recs := obs.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	for i, r := range recs {
		if r.Endpoint != ledger.EndpointBedrockConverse || r.Alias != "coder" || r.Outcome != ledger.OutcomeOK || r.Stream != (i == 1) {
			t.Errorf("record %+v", r)
		}
	}

	// CountTokens takes a Converse request too, and counts it for free.
	rr = post(g, alice, "/model/"+id+"/count-tokens", `{"input":{"converse":{"messages":[{"role":"user","content":[{"text":"how many tokens is this?"}]}],"system":[{"text":"be brief"}]}}}`)
	var n struct{ InputTokens int }
	if rr.Code != 200 || json.Unmarshal(rr.Body.Bytes(), &n) != nil || n.InputTokens < 5 {
		t.Errorf("count-tokens: %d %s", rr.Code, rr.Body)
	}
	if len(obs.Records()) != 2 {
		t.Errorf("counting made records: %d", len(obs.Records()))
	}

	for _, c := range []struct {
		name, path, body string
		id               *policy.Identity
		status           int
		errType, message string
	}{
		{"unknown model", "/model/" + url_("amazon.nova-pro-v1:0") + "/converse", body, alice, 404, "ResourceNotFoundException", `model \"amazon.nova-pro-v1:0\" is not configured`},
		{"bad body", "/model/" + id + "/converse", `{"messages":[]}`, alice, 400, "ValidationException", "messages is required"},
		{"model the key may not use", "/model/" + id + "/converse-stream", body, &policy.Identity{KeyID: "bob", Role: policy.RoleUser, Models: map[string]struct{}{"backup": {}}}, 403, "AccessDeniedException", `may not use model \"coder\"`},
		{"GET", "/model/" + id + "/converse", "", alice, 405, "ValidationException", "use POST"},
	} {
		var rr *httptest.ResponseRecorder
		if c.body == "" {
			rr = serve(g, c.id, c.path, nil)
		} else {
			rr = post(g, c.id, c.path, c.body)
		}
		if rr.Code != c.status || rr.Header().Get("X-Amzn-Errortype") != c.errType || !strings.HasPrefix(rr.Body.String(), `{"message":"`) ||
			!strings.Contains(rr.Body.String(), c.message) || rr.Header().Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %v %s", c.name, rr.Code, rr.Header(), rr.Body)
		}
	}
}
