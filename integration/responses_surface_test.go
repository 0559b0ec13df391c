package integration

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

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
