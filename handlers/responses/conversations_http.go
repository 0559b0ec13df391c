package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// The Conversations API's calls over HTTP, each one a route-table entry
// of the gateway's (handlers/conversations_routes.go).

// conversationCall is what every conversation route starts from: the
// store, the calling key, the store's deadline and, for a POST, the
// checked body.
type conversationCall struct {
	w    http.ResponseWriter
	r    *http.Request
	ctx  context.Context
	cs   ledger.ConversationStore
	key  string
	body ConversationBody
}

// ConversationOp is one call of the Conversations API.
type ConversationOp uint8

// The Conversations API's calls.
const (
	CreateConversation ConversationOp = iota
	GetConversation
	UpdateConversation
	DeleteConversation
	ListConversationItems
	AddConversationItems
	GetConversationItem
	DeleteConversationItem
)

// ConversationHandler answers op for the calling key (the route table
// routes to it): a call needs the ledger database, and a POST's body
// (at most maxBody bytes) must be a valid create or update.
func (s *State) ConversationHandler(op ConversationOp, maxBody int64) http.HandlerFunc {
	h := [...]func(*conversationCall){
		CreateConversation: s.createConversation, GetConversation: getConversation, UpdateConversation: updateConversation,
		DeleteConversation: deleteConversation, ListConversationItems: listConversationItems, AddConversationItems: addConversationItems,
		GetConversationItem: getConversationItem, DeleteConversationItem: deleteConversationItem,
	}[op]
	return func(w http.ResponseWriter, r *http.Request) {
		c := &conversationCall{w: w, r: r, cs: s.Conversations()}
		if c.cs == nil {
			c.write(&providers.APIError{Status: http.StatusNotImplemented,
				Message: "conversations need the gateway's ledger database (ledger in the Caddyfile)"})
			return
		}
		c.key = KeyOf(policy.IdentityFrom(r.Context()))
		ctx, cancel := context.WithTimeout(r.Context(), Timeout)
		defer cancel()
		c.ctx = ctx
		if r.Method == http.MethodPost {
			if apiErr := c.readBody(maxBody); apiErr != nil {
				c.write(apiErr)
				return
			}
		}
		h(c)
	}
}

func (c *conversationCall) readBody(limit int64) *providers.APIError {
	raw, err := io.ReadAll(http.MaxBytesReader(c.w, c.r.Body, limit))
	if err != nil {
		return &providers.APIError{Status: http.StatusRequestEntityTooLarge, Message: "request body too large or unreadable: " + err.Error()}
	}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &c.body); err != nil {
			return &providers.APIError{Status: http.StatusBadRequest, Message: "request body must be a JSON object: " + err.Error()}
		}
	}
	if apiErr := CheckMetadata(c.body.Metadata); apiErr != nil {
		return apiErr
	}
	if len(c.body.Items) > MaxConversationCreate {
		return &providers.APIError{Status: http.StatusBadRequest, Param: "items", Code: "invalid_value",
			Message: fmt.Sprintf("at most %d items may be added at once", MaxConversationCreate)}
	}
	return nil
}

// write answers e in the Conversations API's family, OpenAI's.
func (c *conversationCall) write(e *providers.APIError) { writeError(c.w, e) }

func (c *conversationCall) ok(body []byte) { writeJSON(c.w, body) }

// id and item are the path's conversation and item ids.
func (c *conversationCall) id() string   { return c.r.PathValue("id") }
func (c *conversationCall) item() string { return c.r.PathValue("item") }

// fail answers a store error: a 404 naming what was not found, or the
// store being unavailable.
func (c *conversationCall) fail(err error) {
	switch {
	case errors.Is(err, ledger.ErrConversationNotFound):
		c.write(&providers.APIError{Status: http.StatusNotFound, Code: "not_found",
			Message: fmt.Sprintf("Conversation with id %q not found.", c.id())})
	case errors.Is(err, ledger.ErrItemNotFound):
		c.write(&providers.APIError{Status: http.StatusNotFound, Code: "not_found",
			Message: fmt.Sprintf("Item with id %q not found.", c.item())})
	default:
		c.write(Unavailable(err))
	}
}

// metadata is the body's metadata, an empty object when it has none.
func (c *conversationCall) metadata() json.RawMessage {
	if meta := c.body.Metadata; len(meta) > 0 && string(meta) != "null" {
		return meta
	}
	return json.RawMessage("{}")
}

func (s *State) createConversation(c *conversationCall) {
	items, apiErr := ConversationItems(c.body.Items, "items")
	if apiErr != nil {
		c.write(apiErr)
		return
	}
	conv := ledger.Conversation{ID: NewConversationID("conv_"), KeyID: c.key, Created: time.Unix(s.Now().Unix(), 0), Metadata: c.metadata()}
	if err := c.cs.CreateConversation(c.ctx, conv, items); err != nil {
		c.fail(err)
		return
	}
	c.ok(ConversationObject(conv))
}

func getConversation(c *conversationCall) {
	conv, err := c.cs.GetConversation(c.ctx, c.key, c.id())
	if err != nil {
		c.fail(err)
		return
	}
	c.ok(ConversationObject(conv))
}

func updateConversation(c *conversationCall) {
	conv, err := c.cs.UpdateConversation(c.ctx, c.key, c.id(), c.metadata())
	if err != nil {
		c.fail(err)
		return
	}
	c.ok(ConversationObject(conv))
}

func deleteConversation(c *conversationCall) {
	if err := c.cs.DeleteConversation(c.ctx, c.key, c.id()); err != nil {
		c.fail(err)
		return
	}
	b, _ := json.Marshal(map[string]any{"id": c.id(), "object": "conversation.deleted", "deleted": true})
	c.ok(b)
}

func addConversationItems(c *conversationCall) {
	items, apiErr := ConversationItems(c.body.Items, "items")
	if apiErr != nil {
		c.write(apiErr)
		return
	}
	if len(items) == 0 {
		c.write(&providers.APIError{Status: http.StatusBadRequest, Param: "items", Code: "invalid_value", Message: "items must list at least one item"})
		return
	}
	if err := c.cs.AppendConversationItems(c.ctx, c.key, c.id(), items); err != nil {
		c.fail(err)
		return
	}
	c.ok(ItemList(items))
}

func listConversationItems(c *conversationCall) {
	items, err := c.cs.ConversationItems(c.ctx, c.key, c.id())
	if err != nil {
		c.fail(err)
		return
	}
	all, _ := json.Marshal(items)
	page, apiErr := InputItemsPage(c.r.URL.RawQuery, all)
	if apiErr != nil {
		c.write(apiErr)
		return
	}
	c.ok(page)
}

func getConversationItem(c *conversationCall) {
	it, err := c.cs.ConversationItem(c.ctx, c.key, c.id(), c.item())
	if err != nil {
		c.fail(err)
		return
	}
	c.ok(it)
}

// deleteConversationItem answers with the conversation, as OpenAI does.
func deleteConversationItem(c *conversationCall) {
	if err := c.cs.DeleteConversationItem(c.ctx, c.key, c.id(), c.item()); err != nil {
		c.fail(err)
		return
	}
	getConversation(c)
}
