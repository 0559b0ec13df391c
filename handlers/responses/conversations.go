package responses

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// The Conversations API: a key keeps an ordered list of items on the
// gateway, in the ledger database beside its stored responses, and names
// it in a Responses request (conversation), which reads the items as
// history and appends its own input and output. Every lookup is scoped to
// the calling key; another key's conversation is a 404.

// MaxConversationCreate is how many items one create may carry, as OpenAI
// allows.
const MaxConversationCreate = 20

// conversationStore is the open store's conversations, or nil.
func (s *State) conversationStore() ledger.ConversationStore {
	cs, _ := s.store().(ledger.ConversationStore)
	return cs
}

// NewConversationID is a new random id with prefix (conv_, msg_, …).
func NewConversationID(prefix string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// ConversationObject is c as the Conversations API answers it.
func ConversationObject(c ledger.Conversation) []byte {
	meta := c.Metadata
	if len(bytes.TrimSpace(meta)) == 0 || string(meta) == "null" {
		meta = json.RawMessage("{}")
	}
	b, _ := json.Marshal(map[string]any{"id": c.ID, "object": "conversation", "created_at": c.Created.Unix(), "metadata": meta})
	return b
}

// ConversationItems checks and normalizes items a client adds: each is an
// object; a message given the short way ({role, content: "text"}) is
// written out as OpenAI lists it; each gets an id.
func ConversationItems(raw []json.RawMessage, param string) ([]json.RawMessage, *providers.APIError) {
	out := make([]json.RawMessage, 0, len(raw))
	for i, it := range raw {
		var m map[string]any
		if err := json.Unmarshal(it, &m); err != nil || m == nil {
			return nil, &providers.APIError{Status: http.StatusBadRequest, Param: fmt.Sprintf("%s[%d]", param, i), Code: "invalid_value",
				Message: "each item must be a JSON object"}
		}
		out = append(out, normalizeConversationItem(m))
	}
	return out, nil
}

func normalizeConversationItem(m map[string]any) json.RawMessage {
	typ, _ := m["type"].(string)
	role, _ := m["role"].(string)
	if typ == "" && role != "" {
		typ = "message"
		m["type"] = typ
	}
	if typ == "message" {
		if text, ok := m["content"].(string); ok {
			part := "input_text"
			if role == "assistant" {
				part = "output_text"
			}
			p := map[string]any{"type": part, "text": text}
			if part == "output_text" {
				p["annotations"] = []any{}
			}
			m["content"] = []any{p}
		}
		if _, ok := m["status"]; !ok {
			m["status"] = "completed"
		}
	}
	if id, _ := m["id"].(string); id == "" {
		prefix := "item_"
		switch typ {
		case "message":
			prefix = "msg_"
		case "function_call":
			prefix = "fc_"
		}
		m["id"] = NewConversationID(prefix)
	}
	b, _ := json.Marshal(m)
	return b
}

// ConversationBody is a create or update request.
type ConversationBody struct {
	Items    []json.RawMessage `json:"items"`
	Metadata json.RawMessage   `json:"metadata"`
}

// CheckMetadata allows what OpenAI allows: up to 16 string pairs.
func CheckMetadata(meta json.RawMessage) *providers.APIError {
	if len(meta) == 0 || string(meta) == "null" {
		return nil
	}
	var m map[string]string
	if err := json.Unmarshal(meta, &m); err != nil || len(m) > 16 {
		return &providers.APIError{Status: http.StatusBadRequest, Param: "metadata", Code: "invalid_value",
			Message: "metadata must be an object of at most 16 string values"}
	}
	return nil
}

// ItemList is a list page holding every one of items.
func ItemList(items []json.RawMessage) []byte {
	page := listPage{Object: "list", Data: items}
	if len(items) > 0 {
		first, last := itemID(items[0]), itemID(items[len(items)-1])
		page.FirstID, page.LastID = &first, &last
	}
	b, _ := json.Marshal(page)
	return b
}

func itemID(raw json.RawMessage) string {
	var head struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(raw, &head)
	return head.ID
}

// conversationHistory is the named conversation's items, for a Responses
// turn to read before its own input.
func (s *State) conversationHistory(ctx context.Context, key, id string) ([]json.RawMessage, *providers.APIError) {
	notFound := &providers.APIError{Status: http.StatusNotFound, Param: "conversation", Code: "not_found",
		Message: fmt.Sprintf("Conversation with id %q not found.", id)}
	cs := s.conversationStore()
	if cs == nil {
		return nil, notFound
	}
	items, err := cs.ConversationItems(ctx, key, id)
	switch {
	case errors.Is(err, ledger.ErrConversationNotFound):
		return nil, notFound
	case err != nil:
		return nil, Unavailable(err)
	}
	return items, nil
}

// appendTurn adds a finished turn's input and output to its conversation.
func (s *State) appendTurn(id *policy.Identity, t *providers.ResponsesTurn) {
	cs := s.conversationStore()
	if cs == nil || t.ConversationID == "" || t.Response == nil || (t.Status != "completed" && t.Status != "incomplete") {
		return
	}
	var items []json.RawMessage
	for _, list := range [][]json.RawMessage{t.NewItems, t.Output} {
		for _, raw := range list {
			var m map[string]any
			if json.Unmarshal(raw, &m) == nil && m != nil {
				items = append(items, normalizeConversationItem(m))
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	if err := cs.AppendConversationItems(ctx, KeyOf(id), t.ConversationID, items); err != nil {
		s.report(t.Alias, "conversation_store: "+err.Error())
	}
}

// Conversations is the open store's conversations, or nil.
func (s *State) Conversations() ledger.ConversationStore { return s.conversationStore() }
