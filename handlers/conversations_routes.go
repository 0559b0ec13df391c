package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/modelgate/modelgate/handlers/responses"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelgate/modelgate/internal/route"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// conversationsPath is the Conversations API's root.
const conversationsPath = "/v1/conversations"

// conversationRoutes are the Conversations API's entries of the route
// table. The root also takes a trailing slash, as it always has. Each
// path also has method-less patterns (and HEAD ones, which a GET pattern
// would take otherwise), so that a method no route takes is a 405 naming
// the ones it does, in OpenAI's error family; any other path is the
// gateway's 404 (a bare ServeMux would answer both in plain text).
func (g *Gateway) conversationRoutes() []gatewayRoute {
	const (
		one   = conversationsPath + "/{id}"
		items = one + "/items"
		item  = items + "/{item}"
	)
	var rts []gatewayRoute
	add := func(pattern string, h http.HandlerFunc) {
		rts = append(rts, gatewayRoute{pattern: pattern, family: providers.FormatResponses, h: g.routableConversation(h)})
	}
	for _, rt := range []struct {
		pattern string
		h       func(*conversationCall)
	}{
		{"POST " + conversationsPath, g.createConversation},
		{"POST " + conversationsPath + "/{$}", g.createConversation},
		{"GET " + one, getConversation},
		{"POST " + one, updateConversation},
		{"DELETE " + one, deleteConversation},
		{"GET " + items, listConversationItems},
		{"POST " + items, addConversationItems},
		{"GET " + item, getConversationItem},
		{"DELETE " + item, deleteConversationItem},
	} {
		add(rt.pattern, g.conversationRoute(rt.h))
	}

	// What the routes do not take.
	for _, na := range []struct{ path, allow string }{
		{conversationsPath, "POST"},
		{conversationsPath + "/{$}", "POST"},
		{one, "GET, POST, DELETE"},
		{items, "GET, POST"},
		{item, "GET, DELETE"},
	} {
		h := conversationNotAllowed(na.allow)
		add("HEAD "+na.path, h)
		add(na.path, h)
	}
	return rts
}

// routableConversation answers a path routableConversationPath refuses
// with the gateway's 404, and passes the rest to h.
func (g *Gateway) routableConversation(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !routableConversationPath(r.URL) {
			g.serveNotFound(w, r)
			return
		}
		h(w, r)
	}
}

// routableConversationPath reports whether the table may see u: ServeMux
// would redirect a path with dot segments or doubled slashes, and would
// take an escaped slash into an id; no conversation or item is named
// either way, so such a path is the gateway's 404.
func routableConversationPath(u *url.URL) bool {
	escaped := u.EscapedPath()
	return route.Canonical(escaped) && strings.Count(escaped, "/") == strings.Count(u.Path, "/")
}

// conversationNotAllowed answers a method a path does not take.
func conversationNotAllowed(allow string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		(&providers.APIError{Status: http.StatusMethodNotAllowed,
			Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use " + allow}).Write(w, providers.FormatResponses)
	}
}

// conversationCall is what every conversation route starts from: the
// store, the calling key, the store's deadline and, for a POST, the
// checked body.
type conversationCall struct {
	w    http.ResponseWriter
	r    *http.Request
	ctx  context.Context
	cs   ledger.ConversationStore
	key  string
	body responses.ConversationBody
}

// conversationRoute prepares the call a route h answers: a route needs the
// ledger database, and a POST's body must be a valid create or update.
func (g *Gateway) conversationRoute(h func(*conversationCall)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c := &conversationCall{w: w, r: r, cs: g.rstate.Conversations()}
		if c.cs == nil {
			c.write(&providers.APIError{Status: http.StatusNotImplemented,
				Message: "conversations need the gateway's ledger database (ledger in the Caddyfile)"})
			return
		}
		c.key = responses.KeyOf(policy.IdentityFrom(r.Context()))
		ctx, cancel := context.WithTimeout(r.Context(), responses.Timeout)
		defer cancel()
		c.ctx = ctx
		if r.Method == http.MethodPost {
			if apiErr := c.readBody(g.maxBody()); apiErr != nil {
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
	if apiErr := responses.CheckMetadata(c.body.Metadata); apiErr != nil {
		return apiErr
	}
	if len(c.body.Items) > responses.MaxConversationCreate {
		return &providers.APIError{Status: http.StatusBadRequest, Param: "items", Code: "invalid_value",
			Message: fmt.Sprintf("at most %d items may be added at once", responses.MaxConversationCreate)}
	}
	return nil
}

// write answers e in the Conversations API's family, OpenAI's.
func (c *conversationCall) write(e *providers.APIError) { e.Write(c.w, providers.FormatResponses) }

func (c *conversationCall) ok(body []byte) { writeJSON(c.w, http.StatusOK, body) }

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
		c.write(responses.Unavailable(err))
	}
}

// metadata is the body's metadata, an empty object when it has none.
func (c *conversationCall) metadata() json.RawMessage {
	if meta := c.body.Metadata; len(meta) > 0 && string(meta) != "null" {
		return meta
	}
	return json.RawMessage("{}")
}

func (g *Gateway) createConversation(c *conversationCall) {
	items, apiErr := responses.ConversationItems(c.body.Items, "items")
	if apiErr != nil {
		c.write(apiErr)
		return
	}
	conv := ledger.Conversation{ID: responses.NewConversationID("conv_"), KeyID: c.key, Created: time.Unix(g.now().Unix(), 0), Metadata: c.metadata()}
	if err := c.cs.CreateConversation(c.ctx, conv, items); err != nil {
		c.fail(err)
		return
	}
	c.ok(responses.ConversationObject(conv))
}

func getConversation(c *conversationCall) {
	conv, err := c.cs.GetConversation(c.ctx, c.key, c.id())
	if err != nil {
		c.fail(err)
		return
	}
	c.ok(responses.ConversationObject(conv))
}

func updateConversation(c *conversationCall) {
	conv, err := c.cs.UpdateConversation(c.ctx, c.key, c.id(), c.metadata())
	if err != nil {
		c.fail(err)
		return
	}
	c.ok(responses.ConversationObject(conv))
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
	items, apiErr := responses.ConversationItems(c.body.Items, "items")
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
	c.ok(responses.ItemList(items))
}

func listConversationItems(c *conversationCall) {
	items, err := c.cs.ConversationItems(c.ctx, c.key, c.id())
	if err != nil {
		c.fail(err)
		return
	}
	all, _ := json.Marshal(items)
	page, apiErr := responses.InputItemsPage(c.r.URL.RawQuery, all)
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
