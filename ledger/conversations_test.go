package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestConversationStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs := s.(ConversationStore)
		ctx := context.Background()
		c := Conversation{ID: "conv_1", KeyID: "alice", Created: time.Unix(1700000000, 0), Metadata: json.RawMessage(`{"a":"b"}`)}
		if err := cs.CreateConversation(ctx, c, []json.RawMessage{json.RawMessage(`{"id":"m1","type":"message"}`)}); err != nil {
			t.Fatal(err)
		}
		if err := cs.AppendConversationItems(ctx, "alice", "conv_1",
			[]json.RawMessage{json.RawMessage(`{"id":"m2"}`), json.RawMessage(`{"id":"m3"}`)}); err != nil {
			t.Fatal(err)
		}
		items, err := cs.ConversationItems(ctx, "alice", "conv_1")
		if err != nil || len(items) != 3 || !strings.Contains(string(items[2]), "m3") {
			t.Fatalf("items: %v %s", err, items)
		}
		if err := cs.DeleteConversationItem(ctx, "alice", "conv_1", "m2"); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ConversationItem(ctx, "alice", "conv_1", "m2"); !errors.Is(err, ErrItemNotFound) {
			t.Errorf("deleted item: %v", err)
		}
		if got, err := cs.UpdateConversation(ctx, "alice", "conv_1", json.RawMessage(`{"x":"y"}`)); err != nil || string(got.Metadata) != `{"x":"y"}` {
			t.Errorf("update: %v %+v", err, got)
		}
		// Another key, and ids no row can hold, are not found.
		for _, key := range []string{"bob", ""} {
			if _, err := cs.GetConversation(ctx, key, "conv_1"); !errors.Is(err, ErrConversationNotFound) {
				t.Errorf("%q get: %v", key, err)
			}
			if err := cs.AppendConversationItems(ctx, key, "conv_1", []json.RawMessage{json.RawMessage(`{"id":"x"}`)}); !errors.Is(err, ErrConversationNotFound) {
				t.Errorf("%q append: %v", key, err)
			}
			if _, err := cs.ConversationItem(ctx, key, "conv_1", "m1"); !errors.Is(err, ErrConversationNotFound) {
				t.Errorf("%q item: %v", key, err)
			}
			if err := cs.DeleteConversation(ctx, key, "conv_1"); !errors.Is(err, ErrConversationNotFound) {
				t.Errorf("%q delete: %v", key, err)
			}
		}
		if _, err := cs.GetConversation(ctx, "alice", "conv\x00"); !errors.Is(err, ErrConversationNotFound) {
			t.Errorf("NUL id: %v", err)
		}
		if err := cs.DeleteConversation(ctx, "alice", "conv_1"); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ConversationItems(ctx, "alice", "conv_1"); !errors.Is(err, ErrConversationNotFound) {
			t.Errorf("deleted conversation: %v", err)
		}
	})
}

// TestConversationRetention: conversations expire with the responses
// store's retention: the purge that drops responses created before the
// cut drops conversations created before it too, with their items, and
// keeps the newer ones, on both databases.
func TestConversationRetention(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		cs, rs := s.(ConversationStore), s.(ResponseStore)
		ctx := context.Background()
		old := Conversation{ID: "conv_old", KeyID: "alice", Created: t0, Metadata: json.RawMessage(`{}`)}
		fresh := Conversation{ID: "conv_new", KeyID: "alice", Created: t0.Add(time.Hour), Metadata: json.RawMessage(`{}`)}
		for _, c := range []Conversation{old, fresh} {
			if err := cs.CreateConversation(ctx, c, []json.RawMessage{json.RawMessage(`{"id":"m_` + c.ID + `"}`)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := rs.PutResponse(ctx, storedResponse(1, "")); err != nil {
			t.Fatal(err)
		}
		n, err := rs.PurgeResponses(ctx, t0.Add(30*time.Minute))
		if err != nil || n != 2 {
			t.Fatalf("purge: %d %v, want the old response and the old conversation", n, err)
		}
		if _, err := cs.GetConversation(ctx, "alice", "conv_old"); !errors.Is(err, ErrConversationNotFound) {
			t.Errorf("expired conversation: %v", err)
		}
		var left int
		if err := s.(*sqlStore).db.QueryRowContext(ctx, `SELECT COUNT(*) FROM conversation_items WHERE conversation_id = 'conv_old'`).Scan(&left); err != nil || left != 0 {
			t.Errorf("expired conversation's items: %d left, %v", left, err)
		}
		if items, err := cs.ConversationItems(ctx, "alice", "conv_new"); err != nil || len(items) != 1 {
			t.Errorf("kept conversation: %v %s", err, items)
		}
	})
}
