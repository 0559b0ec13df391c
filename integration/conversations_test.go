package integration

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/conversations"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestConversationsAPI: the official SDK creates, reads, updates, lists,
// pages and deletes conversations and their items; a Responses turn in a
// conversation gets its items as history and appends its own; another key
// gets 404 for all of it. On SQLite, and on PostgreSQL when one is up.
func TestConversationsAPI(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		up := startUpstreams(t, fakes.Options{})
		checkConversations(t, up, startGateway(t, gatewayConfig{models: up.modelsYAML()}))
	})
	t.Run("postgres", func(t *testing.T) {
		u, _, _ := freshSchema(t)
		up := startUpstreams(t, fakes.Options{})
		checkConversations(t, up, startGateway(t, gatewayConfig{models: up.modelsYAML(),
			ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + u.String()}}))
	})
}

func checkConversations(t *testing.T, up *upstreams, g *gateway) {
	alice, bob := openaiClient(g, aliceKey), openaiClient(g, adminKey)
	ctx := context.Background()

	conv, err := alice.Conversations.New(ctx, conversations.ConversationNewParams{
		Metadata: shared.Metadata{"topic": "birds"},
		Items: []responses.ResponseInputItemUnionParam{
			responses.ResponseInputItemParamOfMessage("Remember: the code word is heron.", responses.EasyInputMessageRoleUser),
		}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(conv.ID, "conv_") || !strings.Contains(conv.RawJSON(), `"topic":"birds"`) || conv.CreatedAt == 0 {
		t.Fatalf("created: %s", conv.RawJSON())
	}

	// A turn in the conversation: its items are the history, and the
	// turn's input and output are appended.
	resp := newResponse(t, alice, responses.ResponseNewParams{Model: "claude",
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)},
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("What was the code word?")}})
	if body := string(up.anthropicRec.Last().Body); !strings.Contains(body, "heron") || !strings.Contains(body, "What was the code word?") {
		t.Errorf("the conversation's items were not the history: %s", body)
	}
	if resp.Conversation.ID != conv.ID {
		t.Errorf("a turn in a conversation answers conversation %q, want %q", resp.Conversation.ID, conv.ID)
	}
	// Streamed, on each backend (in a conversation of their own): the
	// created and the completed event's Response name the conversation.
	other, err := alice.Conversations.New(ctx, conversations.ConversationNewParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, model := range []string{"claude", "oa"} {
		s := alice.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: model,
			Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(other.ID)},
			Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("Still there?")}})
		named := map[string]string{}
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.created" || ev.Type == "response.completed" {
				named[ev.Type] = ev.Response.Conversation.ID
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if named["response.created"] != other.ID || named["response.completed"] != other.ID {
			t.Errorf("%s: streamed events name conversations %v, want %s", model, named, other.ID)
		}
	}
	// A second turn, on another backend, naming it the object way.
	second := newResponse(t, alice, responses.ResponseNewParams{Model: "oa",
		Conversation: responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: conv.ID}},
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("And again?")}})
	if second.Conversation.ID != conv.ID {
		t.Errorf("the oa turn answers conversation %q, want %q", second.Conversation.ID, conv.ID)
	}
	if body := string(up.openaiRec.Last().Body); !strings.Contains(body, "heron") || !strings.Contains(body, fakes.DefaultReply) || strings.Contains(body, conv.ID) {
		t.Errorf("second turn's upstream body: %s", body)
	}

	page, err := alice.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Order: conversations.ItemListParamsOrderAsc})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, it := range page.Data {
		if it.Type != "message" || it.ID == "" {
			t.Errorf("item: %s", it.RawJSON())
		}
		for _, c := range it.AsMessage().Content {
			texts = append(texts, c.Text)
		}
	}
	want := []string{"Remember: the code word is heron.", "What was the code word?", resp.OutputText(), "And again?", fakes.DefaultReply}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("items %q, want %q", texts, want)
	}
	// Paging: newest first by default, two at a time, after a cursor.
	first, err := alice.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: openai.Int(2)})
	if err != nil || len(first.Data) != 2 || !first.HasMore || first.Data[0].ID != page.Data[4].ID {
		t.Fatalf("first page: %v %s", err, first.RawJSON())
	}
	next, err := alice.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{Limit: openai.Int(2), After: openai.String(first.LastID)})
	if err != nil || len(next.Data) != 2 || next.Data[0].ID != page.Data[2].ID {
		t.Fatalf("next page: %v %s", err, next.RawJSON())
	}

	added, err := alice.Conversations.Items.New(ctx, conv.ID, conversations.ItemNewParams{Items: []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage("A note.", responses.EasyInputMessageRoleUser)}})
	if err != nil || len(added.Data) != 1 || added.Data[0].ID == "" {
		t.Fatalf("add item: %v %+v", err, added)
	}
	one, err := alice.Conversations.Items.Get(ctx, conv.ID, added.Data[0].ID, conversations.ItemGetParams{})
	if err != nil || len(one.AsMessage().Content) != 1 || one.AsMessage().Content[0].Text != "A note." {
		t.Fatalf("get item: %v %+v", err, one)
	}
	if _, err := alice.Conversations.Items.Delete(ctx, conv.ID, added.Data[0].ID); err != nil {
		t.Fatal(err)
	}
	var apiErr *openai.Error
	if _, err := alice.Conversations.Items.Get(ctx, conv.ID, added.Data[0].ID, conversations.ItemGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("deleted item: %v", err)
	}

	updated, err := alice.Conversations.Update(ctx, conv.ID, conversations.ConversationUpdateParams{Metadata: shared.Metadata{"topic": "herons"}})
	if err != nil || !strings.Contains(updated.RawJSON(), `"topic":"herons"`) {
		t.Fatalf("update: %v %+v", err, updated)
	}
	got, err := alice.Conversations.Get(ctx, conv.ID)
	if err != nil || !strings.Contains(got.RawJSON(), `"topic":"herons"`) || got.Object != "conversation" {
		t.Fatalf("get: %v %+v", err, got)
	}

	// Bob's key sees none of it.
	if _, err := bob.Conversations.Get(ctx, conv.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("bob get: %v", err)
	}
	if _, err := bob.Conversations.Items.List(ctx, conv.ID, conversations.ItemListParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("bob items: %v", err)
	}
	if _, err := bob.Conversations.Items.Get(ctx, conv.ID, page.Data[0].ID, conversations.ItemGetParams{}); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("bob item: %v", err)
	}
	if _, err := bob.Conversations.Delete(ctx, conv.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("bob delete: %v", err)
	}
	_, err = bob.Responses.New(ctx, responses.ResponseNewParams{Model: "oa",
		Conversation: responses.ResponseNewParamsConversationUnion{OfString: openai.String(conv.ID)},
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("bob's turn in alice's conversation: %v", err)
	}

	del, err := alice.Conversations.Delete(ctx, conv.ID)
	if err != nil || !del.Deleted || del.Object != "conversation.deleted" {
		t.Fatalf("delete: %v %+v", err, del)
	}
	if _, err := alice.Conversations.Get(ctx, conv.ID); !errors.As(err, &apiErr) || apiErr.StatusCode != 404 {
		t.Errorf("deleted conversation: %v", err)
	}
}
