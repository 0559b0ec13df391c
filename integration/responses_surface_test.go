package integration

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestResponsesRetrieveStream: the openai SDK's retrieve with stream
// replays a stored response as its events, in order, numbered, from
// starting_after on; another key's retrieve is a 404.
func TestResponsesRetrieveStream(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	alice, bob := openaiClient(g, aliceKey), openaiClient(g, adminKey)
	ctx := context.Background()
	first := newResponse(t, alice, responses.ResponseNewParams{Model: "oa",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}})

	replay := func(c openai.Client, p responses.ResponseGetParams) ([]responses.ResponseStreamEventUnion, error) {
		s := c.Responses.GetStreaming(ctx, first.ID, p)
		var evs []responses.ResponseStreamEventUnion
		for s.Next() {
			evs = append(evs, s.Current())
		}
		return evs, s.Err()
	}
	evs, err := replay(alice, responses.ResponseGetParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) < 4 || evs[0].Type != "response.created" || evs[len(evs)-1].Type != "response.completed" {
		t.Fatalf("events %v", eventTypes(evs))
	}
	var text strings.Builder
	for i, ev := range evs {
		if ev.SequenceNumber != int64(i) {
			t.Errorf("event %d (%s) has sequence number %d", i, ev.Type, ev.SequenceNumber)
		}
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	if got := evs[len(evs)-1].Response; got.ID != first.ID || got.OutputText() != first.OutputText() {
		t.Errorf("completed response %s %q, want %s %q", got.ID, got.OutputText(), first.ID, first.OutputText())
	}
	if text.String() != first.OutputText() {
		t.Errorf("deltas %q, want %q", text.String(), first.OutputText())
	}

	rest, err := replay(alice, responses.ResponseGetParams{StartingAfter: openai.Int(2)})
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != len(evs)-3 || rest[0].SequenceNumber != 3 {
		t.Errorf("starting_after=2 gave %v, want the events from 3 on of %v", eventTypes(rest), eventTypes(evs))
	}

	_, err = replay(bob, responses.ResponseGetParams{})
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Errorf("another key's replay: %v, want 404", err)
	}
}

func eventTypes(evs []responses.ResponseStreamEventUnion) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		out[i] = ev.Type
	}
	return out
}

// TestResponsesCompact: the openai SDK's responses.compact (once a 405,
// "compact" read as a response id) compacts a stored conversation through
// the alias: the upstream gets the history and the summary request, the
// SDK gets one item holding the summary, which the next turn takes as
// input, and the ledger records the summarising call on the key.
func TestResponsesCompact(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	alice := openaiClient(g, aliceKey)
	ctx := context.Background()
	first := newResponse(t, alice, responses.ResponseNewParams{Model: "oa",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Ada and I like Go.")}})

	c, err := alice.Responses.Compact(ctx, responses.ResponseCompactParams{Model: "oa", PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseCompactParamsInputUnion{OfString: openai.String("Remember the port is 8080.")}})
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		t.Fatalf("%d %s", apiErr.StatusCode, apiErr.RawJSON())
	}
	if err != nil {
		t.Fatal(err)
	}
	up := string(u.openaiRec.Last().Body)
	for _, want := range []string{"My name is Ada", fakes.DefaultReply, "Remember the port is 8080.", "Summarise the conversation"} {
		if !strings.Contains(up, want) {
			t.Errorf("the summarising call lacks %q: %s", want, up)
		}
	}
	if c.Object != "response.compaction" || len(c.Output) != 1 || c.Output[0].Type != "message" ||
		!strings.Contains(c.Output[0].Content[0].Text, fakes.DefaultReply) {
		t.Fatalf("compaction %s", c.RawJSON())
	}
	// The compacted item starts the next turn.
	next := newResponse(t, alice, responses.ResponseNewParams{Model: "oa", Input: responses.ResponseNewParamsInputUnion{
		OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage(c.Output[0].Content[0].Text, responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("What is the port?", responses.EasyInputMessageRoleUser),
		}}})
	if next.OutputText() == "" {
		t.Errorf("no answer after compaction")
	}
	g.stop(t)
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint == "responses" && rec.KeyID == "alice" {
			n++
		}
	}
	if n != 3 {
		t.Errorf("%d responses records for alice, want 3 (the turn, the compaction, the next turn)", n)
	}
}

// TestResponsesWebSocketWire drives the WebSocket with a plain client: an
// unknown frame gets an error
// event and the connection goes on, a turn streams its events to
// response.completed, and a follow-up with previous_response_id on a
// store: false turn carries the connection's history upstream.
func TestResponsesWebSocketWire(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "ws" + strings.TrimPrefix(g.base, "http") + "/v1/responses"

	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + aliceKey}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	read := func() map[string]any {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("frame %s: %v", b, err)
		}
		return m
	}
	turn := func(body string) (types []string, done map[string]any) {
		t.Helper()
		if err := c.Write(ctx, websocket.MessageText, []byte(body)); err != nil {
			t.Fatal(err)
		}
		for {
			m := read()
			types = append(types, m["type"].(string))
			if m["type"] == "response.completed" || m["type"] == "error" {
				return types, m
			}
		}
	}
	if _, m := turn(`{"type":"response.nonsense"}`); m["type"] != "error" || m["status"] != float64(400) {
		t.Errorf("unknown frame: %v", m)
	}
	types, done := turn(`{"type":"response.create","model":"oa","store":false,"input":"My name is Ada."}`)
	if types[0] != "response.created" || done["type"] != "response.completed" {
		t.Fatalf("turn events %v", types)
	}
	id := done["response"].(map[string]any)["id"].(string)
	_, done = turn(`{"type":"response.create","model":"oa","store":false,"previous_response_id":"` + id + `","input":[{"role":"user","content":"What is my name?"}]}`)
	if done["type"] != "response.completed" {
		t.Fatalf("follow-up: %v", done)
	}
	up := string(u.openaiRec.Last().Body)
	for _, want := range []string{"My name is Ada.", fakes.DefaultReply, "What is my name?"} {
		if !strings.Contains(up, want) {
			t.Errorf("the follow-up upstream lacks %q of the connection's history: %s", want, up)
		}
	}
	if _, m := turn(`{"type":"response.create","model":"nope","input":"hi"}`); m["type"] != "error" || m["status"] == float64(200) {
		t.Errorf("unknown model: %v", m)
	}
	c.Close(websocket.StatusNormalClosure, "")
	g.stop(t)
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint == "responses_websocket" && rec.KeyID == "alice" && rec.Outcome == "ok" {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d ok responses_websocket records for alice, want 2", n)
	}
}

// TestResponsesCancelNotBackground: cancelling a response that was not
// created with background: true is OpenAI's 400, through the SDK; an
// unknown id is a 404.
func TestResponsesCancelNotBackground(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	alice := openaiClient(g, aliceKey)
	ctx := context.Background()
	first := newResponse(t, alice, responses.ResponseNewParams{Model: "oa",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}})
	_, err := alice.Responses.Cancel(ctx, first.ID)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "background") {
		t.Errorf("cancel of a finished response: %v, want 400 naming background", err)
	}
	_, err = alice.Responses.Cancel(ctx, "resp_nope")
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound {
		t.Errorf("cancel of an unknown response: %v, want 404", err)
	}
}
