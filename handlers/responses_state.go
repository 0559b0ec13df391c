package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// The gateway owns Responses API state on every backend: what a key
// stored (store: true) is in the ledger database, so a conversation goes
// on across aliases, backends, fallbacks and gateway instances, and no
// other key can read it.

// responseStore is the open store, or nil.
func (g *Gateway) responseStore() ledger.ResponseStore {
	if g.opts.Responses == nil {
		return nil
	}
	return g.opts.Responses()
}

// stateTimeout bounds one state lookup or write.
const stateTimeout = 10 * time.Second

func keyOf(id *policy.Identity) string {
	if id == nil {
		return ""
	}
	return id.KeyID
}

// resolveHistory puts the stored conversation before the turn's input and
// replaces item references with the items they name.
func (g *Gateway) resolveHistory(ctx context.Context, id *policy.Identity, t *providers.ResponsesTurn) error {
	rs := g.responseStore()
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	if prev := t.Req.PreviousResponseID; prev != nil {
		notFound := &providers.APIError{Status: http.StatusBadRequest, Param: "previous_response_id", Code: "previous_response_not_found",
			Message: fmt.Sprintf("Previous response with id %q not found.", *prev)}
		if rs == nil {
			return notFound
		}
		chain, err := rs.ResponseChain(ctx, keyOf(id), *prev)
		switch {
		case errors.Is(err, ledger.ErrResponseNotFound):
			return notFound
		case err != nil:
			return stateUnavailable(err)
		}
		var history []json.RawMessage
		for _, resp := range chain {
			for _, list := range []json.RawMessage{resp.Input, resp.Output} {
				var items []json.RawMessage
				if json.Unmarshal(list, &items) == nil {
					history = append(history, items...)
				}
			}
		}
		t.Prepend(history)
	}
	if t.ConversationID != "" {
		items, apiErr := g.conversationHistory(ctx, keyOf(id), t.ConversationID)
		if apiErr != nil {
			return apiErr
		}
		t.Prepend(items)
	}
	var lookupErr error
	err := t.ResolveReferences(func(itemID string) (json.RawMessage, bool) {
		if rs == nil {
			return nil, false
		}
		item, err := rs.Item(ctx, keyOf(id), itemID)
		if err != nil && !errors.Is(err, ledger.ErrResponseNotFound) {
			lookupErr = err
		}
		return item, err == nil
	})
	if lookupErr != nil {
		return stateUnavailable(lookupErr)
	}
	return err
}

func stateUnavailable(err error) *providers.APIError {
	return &providers.APIError{Status: http.StatusServiceUnavailable,
		Message: "stored responses cannot be read right now (the ledger database is unavailable); retry, or send the history in input with store: false"}
}

// keepResponse stores a finished response the client asked to keep, before
// the client has its end: the next turn may refer to it at once.
func (g *Gateway) keepResponse(id *policy.Identity, info providers.RequestInfo, rec *ledger.Record) {
	if t, ok := info.Turn.(*providers.ResponsesTurn); ok {
		g.appendTurn(id, t)
	}
	t := info.KeptResponse()
	if t == nil {
		return
	}
	rs := g.responseStore()
	if rs == nil {
		return
	}
	input, _ := json.Marshal(t.NewItems)
	output, _ := json.Marshal(t.Output)
	output = g.redactStored(id, t.Alias, rec, output)
	response := g.redactStored(id, t.Alias, rec, t.Response)
	prev := ""
	if t.Req.PreviousResponseID != nil {
		prev = *t.Req.PreviousResponseID
	}
	ctx, cancel := context.WithTimeout(context.Background(), stateTimeout)
	defer cancel()
	err := rs.PutResponse(ctx, ledger.StoredResponse{ID: t.ID, KeyID: keyOf(id), PreviousID: prev,
		Model: t.Alias, Created: time.Unix(t.Created, 0), Input: input, Output: output, Response: response})
	if err != nil {
		g.obs.Attempt(Attempt{Alias: t.Alias, Err: "response_store: " + err.Error()})
	}
}

// serveStoredResponse answers GET and DELETE /v1/responses/{id} and
// GET /v1/responses/{id}/input_items for the calling key.
func (g *Gateway) serveStoredResponse(w http.ResponseWriter, r *http.Request) {
	cf := providers.FormatResponses
	p := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1"), "/responses/")
	respID, sub, _ := strings.Cut(p, "/")
	if respID == "" || (sub != "" && sub != "input_items" && sub != "cancel") {
		g.serveNotFound(w, r)
		return
	}
	allowed := http.MethodGet
	switch sub {
	case "":
		allowed = "GET, DELETE"
	case "cancel":
		allowed = http.MethodPost
	}
	if !slices.Contains(strings.Split(allowed, ", "), r.Method) {
		w.Header().Set("Allow", allowed)
		(&providers.APIError{Status: http.StatusMethodNotAllowed,
			Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use " + allowed}).Write(w, cf)
		return
	}
	notFound := &providers.APIError{Status: http.StatusNotFound, Code: "not_found",
		Message: fmt.Sprintf("Response with id %q not found.", respID)}
	rs := g.responseStore()
	if rs == nil {
		notFound.Write(w, cf)
		return
	}
	key := keyOf(policy.IdentityFrom(r.Context()))
	ctx, cancel := context.WithTimeout(r.Context(), stateTimeout)
	defer cancel()
	if r.Method == http.MethodDelete {
		switch err := rs.DeleteResponse(ctx, key, respID); {
		case errors.Is(err, ledger.ErrResponseNotFound):
			notFound.Write(w, cf)
		case err != nil:
			stateUnavailable(err).Write(w, cf)
		default:
			b, _ := json.Marshal(map[string]any{"id": respID, "object": "response", "deleted": true})
			writeJSON(w, http.StatusOK, b)
		}
		return
	}
	stored, err := rs.GetResponse(ctx, key, respID)
	switch {
	case errors.Is(err, ledger.ErrResponseNotFound):
		notFound.Write(w, cf)
		return
	case err != nil:
		stateUnavailable(err).Write(w, cf)
		return
	}
	stored = g.settleLapsed(ctx, rs, stored)
	if sub == "cancel" {
		g.cancelBackground(w, r, rs, stored)
		return
	}
	if sub == "" {
		if replay, after, apiErr := wantsReplay(r); apiErr != nil {
			apiErr.Write(w, cf)
		} else if replay {
			out := httpSink(w, cf)
			if run := g.states.bg.get(key, respID); run == nil || !replayRun(r.Context(), out, run, after) {
				replayResponse(out, stored.Response, after)
			}
		} else {
			writeJSON(w, http.StatusOK, stored.Response)
		}
		return
	}
	page, apiErr := inputItemsPage(r, stored.Input)
	if apiErr != nil {
		apiErr.Write(w, cf)
		return
	}
	writeJSON(w, http.StatusOK, page)
}

// inputItemsPage is one page of a response's input items: limit (1–100,
// default 20), order (desc by default) and after (an item id).
func inputItemsPage(r *http.Request, input json.RawMessage) ([]byte, *providers.APIError) {
	q, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		return nil, &providers.APIError{Status: http.StatusBadRequest, Message: err.Error()}
	}
	limit := 20
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "limit", Message: "limit must be an integer from 1 to 100"}
		}
		limit = n
	}
	order := q.Get("order")
	switch order {
	case "", "desc":
		order = "desc"
	case "asc":
	default:
		return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "order", Message: "order must be asc or desc"}
	}
	var items []json.RawMessage
	_ = json.Unmarshal(input, &items)
	if order == "desc" {
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	}
	ids := make([]string, len(items))
	for i, it := range items {
		var head struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(it, &head)
		ids[i] = head.ID
	}
	start := 0
	if after := q.Get("after"); after != "" {
		start = -1
		for i, id := range ids {
			if id == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "after", Message: fmt.Sprintf("no input item %q in this response", after)}
		}
	}
	end := min(start+limit, len(items))
	page := struct {
		Object  string            `json:"object"`
		Data    []json.RawMessage `json:"data"`
		FirstID *string           `json:"first_id"`
		LastID  *string           `json:"last_id"`
		HasMore bool              `json:"has_more"`
	}{Object: "list", Data: items[start:end], HasMore: end < len(items)}
	if end > start {
		page.FirstID, page.LastID = &ids[start], &ids[end-1]
	}
	b, _ := json.Marshal(page)
	return b, nil
}
