package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/modelgate/modelgate/handlers/responses"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// The Responses API's stored state is package responses; the core reaches
// it through responseState (core.go). What is here is the door: the HTTP
// answers for a stored response.

// keepResponse stores a finished response the client asked to keep
// (responses.State.Keep), before the client has its end.
func (g *Gateway) keepResponse(id *policy.Identity, info providers.RequestInfo, rec *ledger.Record) {
	g.state.Keep(id, info, rec)
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
	rs := g.rstate.OpenStore()
	if rs == nil {
		notFound.Write(w, cf)
		return
	}
	key := responses.KeyOf(policy.IdentityFrom(r.Context()))
	ctx, cancel := context.WithTimeout(r.Context(), responses.Timeout)
	defer cancel()
	if r.Method == http.MethodDelete {
		switch err := rs.DeleteResponse(ctx, key, respID); {
		case errors.Is(err, ledger.ErrResponseNotFound):
			notFound.Write(w, cf)
		case err != nil:
			responses.Unavailable(err).Write(w, cf)
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
		responses.Unavailable(err).Write(w, cf)
		return
	}
	stored = g.rstate.SettleLapsed(ctx, rs, stored)
	if sub == "cancel" {
		if resp, apiErr := g.rstate.Cancel(r.Context(), rs, stored); apiErr != nil {
			apiErr.Write(w, cf)
		} else {
			writeJSON(w, http.StatusOK, resp)
		}
		return
	}
	if sub == "" {
		if replay, after, apiErr := responses.WantsReplay(r); apiErr != nil {
			apiErr.Write(w, cf)
		} else if replay {
			out := httpSink(w, cf)
			if run := g.rstate.Runs.Get(key, respID); run == nil || !run.Replay(r.Context(), out, after) {
				responses.ReplayStored(out, stored.Response, after)
			}
		} else {
			writeJSON(w, http.StatusOK, stored.Response)
		}
		return
	}
	page, apiErr := responses.InputItemsPage(r.URL.RawQuery, stored.Input)
	if apiErr != nil {
		apiErr.Write(w, cf)
		return
	}
	writeJSON(w, http.StatusOK, page)
}
