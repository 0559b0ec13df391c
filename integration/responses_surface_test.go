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
