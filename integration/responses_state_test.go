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

func newResponse(t *testing.T, client openai.Client, p responses.ResponseNewParams) *responses.Response {
	t.Helper()
	resp, err := client.Responses.New(context.Background(), p)
	var apiErr *openai.Error
	if errors.As(err, &apiErr) {
		t.Fatalf("%d %s", apiErr.StatusCode, apiErr.RawJSON())
	}
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// TestResponsesStateOwnedByTheGateway: store, previous_response_id across
// backends, item_reference, GET, input_items and DELETE, each scoped to
// the key.
func TestResponsesStateOwnedByTheGateway(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	alice, bob := openaiClient(g, aliceKey), openaiClient(g, adminKey)
	ctx := context.Background()

	// Turn 1 on the OpenAI-compatible backend, stored by default.
	first := newResponse(t, alice, responses.ResponseNewParams{Model: "oa", Instructions: openai.String("Speak like a pirate."),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("My name is Ada.")}})
	// Turn 2 continues it on Anthropic: the history goes along, the old
	// instructions do not.
	second := newResponse(t, alice, responses.ResponseNewParams{Model: "claude", PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What is my name?")}})
	body := string(u.anthropicRec.Last().Body)
	for _, want := range []string{"My name is Ada.", fakes.DefaultReply, "What is my name?"} {
		if !strings.Contains(body, want) {
			t.Errorf("Anthropic did not get %q of the history: %s", want, body)
		}
	}
	if strings.Contains(body, "pirate") {
		t.Errorf("instructions were inherited through previous_response_id: %s", body)
	}
	if second.PreviousResponseID != first.ID {
		t.Errorf("previous_response_id echoed %q", second.PreviousResponseID)
	}
	// Turn 3 refers to items by id, as the AI SDK does with store on.
	msgID := first.Output[0].ID
	third := newResponse(t, alice, responses.ResponseNewParams{Model: "llama", Input: responses.ResponseNewParamsInputUnion{
		OfInputItemList: responses.ResponseInputParam{
			{OfItemReference: &responses.ResponseInputItemItemReferenceParam{ID: msgID}},
			responses.ResponseInputItemParamOfMessage("And now?", responses.EasyInputMessageRoleUser),
		}}})
	if !strings.Contains(string(u.ollamaRec.Last().Body), fakes.DefaultReply) || third.OutputText() != fakes.DefaultReply {
		t.Errorf("item_reference not resolved: %s", u.ollamaRec.Last().Body)
	}

	got, err := alice.Responses.Get(ctx, second.ID, responses.ResponseGetParams{})
	if err != nil || got.ID != second.ID || got.OutputText() != second.OutputText() {
		t.Fatalf("get: %v %+v", err, got)
	}
	page, err := alice.Responses.InputItems.List(ctx, second.ID, responses.InputItemListParams{})
	if err != nil || len(page.Data) != 1 || !strings.Contains(page.Data[0].RawJSON(), "What is my name?") {
		t.Fatalf("input_items: %v %+v", err, page)
	}

	// Bob's key sees none of Alice's responses.
	var apiErr *openai.Error
	if _, err := bob.Responses.Get(ctx, second.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("bob get: %v", err)
	}
	_, err = bob.Responses.New(ctx, responses.ResponseNewParams{Model: "oa", PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "previous_response_not_found" {
		t.Errorf("bob continuing alice: %v", err)
	}
	if err := bob.Responses.Delete(ctx, first.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("bob delete: %v", err)
	}

	// store: false keeps nothing.
	unstored := newResponse(t, alice, responses.ResponseNewParams{Model: "echo", Store: openai.Bool(false),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("forget me")}})
	if _, err := alice.Responses.Get(ctx, unstored.ID, responses.ResponseGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("store:false response readable: %v", err)
	}

	if err := alice.Responses.Delete(ctx, first.ID); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := g.do(t, http.MethodGet, "/v1/responses/"+first.ID, aliceKey, ""); status != 404 {
		t.Errorf("deleted response: %d", status)
	}
	if status, _, out := g.do(t, http.MethodPost, "/v1/responses/"+second.ID, aliceKey, "{}"); status != 405 {
		t.Errorf("POST on a stored response: %d %s", status, out)
	}
}

// TestResponsesStateAcrossInstances: two gateways on one PostgreSQL
// continue each other's conversations.
func TestResponsesStateAcrossInstances(t *testing.T) {
	u, _, _ := freshSchema(t)
	up := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: up.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + u.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	first := newResponse(t, openaiClient(a, aliceKey), responses.ResponseNewParams{Model: "oa",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Remember: the code word is heron.")}})
	second := newResponse(t, openaiClient(b, aliceKey), responses.ResponseNewParams{Model: "claude", PreviousResponseID: openai.String(first.ID),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("What was the code word?")}})
	if !strings.Contains(string(up.anthropicRec.Last().Body), "heron") {
		t.Errorf("instance b did not continue a's conversation: %s", up.anthropicRec.Last().Body)
	}
	ca := openaiClient(a, aliceKey)
	if _, err := ca.Responses.Get(context.Background(), second.ID, responses.ResponseGetParams{}); err != nil {
		t.Errorf("instance a cannot read b's response: %v", err)
	}
}
