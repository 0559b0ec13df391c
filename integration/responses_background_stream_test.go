package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
)

// TestResponsesBackgroundStreamCreate: responses.create({background:
// true, stream: true}) answers the run's events from its creation, as
// OpenAI does (a client review found it answered one JSON object, and the SDK
// saw no event and no error). response.created names the id; the client
// leaves after a few events, the run goes on to completed, and a
// retrieve-stream with starting_after resumes right after the last event
// it saw.
func TestResponsesBackgroundStreamCreate(t *testing.T) {
	up := startSlowChat(t, 8, 100*time.Millisecond)
	g := startGateway(t, gatewayConfig{models: up.modelsYAML()})
	alice := openaiClient(g, aliceKey)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	input := responses.ResponseNewParamsInputUnion{OfString: openai.String("Count slowly")}

	s := alice.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)})
	var seen []responses.ResponseStreamEventUnion
	for len(seen) < 4 && s.Next() {
		seen = append(seen, s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	if len(seen) < 4 || seen[0].Type != "response.created" || !strings.HasPrefix(seen[0].Response.ID, "resp_") {
		t.Fatalf("background stream began with %v", eventTypes(seen))
	}
	id := seen[0].Response.ID
	last := seen[len(seen)-1].SequenceNumber
	// The client leaves mid-run.
	s.Close()
	cancel()

	done := waitResponseStatus(t, alice, id, "completed", "failed", "cancelled")
	if done.Status != "completed" || done.OutputText() != "w0 w1 w2 w3 w4 w5 w6 w7 " || !done.Background {
		t.Fatalf("after the client left, the run ended %s %q", done.Status, done.OutputText())
	}
	rest := alice.Responses.GetStreaming(context.Background(), id, responses.ResponseGetParams{StartingAfter: openai.Int(last)})
	var evs []responses.ResponseStreamEventUnion
	for rest.Next() {
		evs = append(evs, rest.Current())
	}
	if err := rest.Err(); err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].SequenceNumber != last+1 || evs[len(evs)-1].Type != "response.completed" || evs[len(evs)-1].Response.ID != id {
		t.Fatalf("resumed after %d: %v", last, eventTypes(evs))
	}
}
