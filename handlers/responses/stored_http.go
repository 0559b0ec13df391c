package responses

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// StoredOp is one call on a stored response.
type StoredOp uint8

// The calls on a stored response, each a route-table entry of the
// gateway's (handlers/responses_state.go).
const (
	// GetResponse is GET /v1/responses/{id}: the Response, or with
	// stream its events (replayed from a run here, else from the row).
	GetResponse StoredOp = iota
	// DeleteResponse is DELETE /v1/responses/{id}.
	DeleteResponse
	// ResponseInputItems is GET /v1/responses/{id}/input_items.
	ResponseInputItems
	// CancelResponse is POST /v1/responses/{id}/cancel.
	CancelResponse
)

// StoredHandler answers op for the calling key's response {id}; out is
// the door's sink over the client's connection, for a replay.
func (s *State) StoredHandler(op StoredOp, out func(http.ResponseWriter) Out) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		respID := r.PathValue("id")
		notFound := &providers.APIError{Status: http.StatusNotFound, Code: "not_found",
			Message: fmt.Sprintf("Response with id %q not found.", respID)}
		rs := s.store()
		if rs == nil {
			writeError(w, notFound)
			return
		}
		key := KeyOf(policy.IdentityFrom(r.Context()))
		ctx, cancel := context.WithTimeout(r.Context(), Timeout)
		defer cancel()
		if op == DeleteResponse {
			switch err := rs.DeleteResponse(ctx, key, respID); {
			case errors.Is(err, ledger.ErrResponseNotFound):
				writeError(w, notFound)
			case err != nil:
				writeError(w, Unavailable(err))
			default:
				b, _ := json.Marshal(map[string]any{"id": respID, "object": "response", "deleted": true})
				writeJSON(w, b)
			}
			return
		}
		stored, err := rs.GetResponse(ctx, key, respID)
		switch {
		case errors.Is(err, ledger.ErrResponseNotFound):
			writeError(w, notFound)
			return
		case err != nil:
			writeError(w, Unavailable(err))
			return
		}
		stored = s.SettleLapsed(ctx, rs, stored)
		switch op {
		case CancelResponse:
			if resp, apiErr := s.Cancel(r.Context(), rs, stored); apiErr != nil {
				writeError(w, apiErr)
			} else {
				writeJSON(w, resp)
			}
		case GetResponse:
			if replay, after, apiErr := WantsReplay(r); apiErr != nil {
				writeError(w, apiErr)
			} else if replay {
				o := out(w)
				if run := s.Runs.Get(key, respID); run == nil || !run.Replay(r.Context(), o, after) {
					ReplayStored(o, stored.Response, after)
				}
			} else {
				writeJSON(w, stored.Response)
			}
		default:
			page, apiErr := InputItemsPage(r.URL.RawQuery, stored.Input)
			if apiErr != nil {
				writeError(w, apiErr)
				return
			}
			writeJSON(w, page)
		}
	}
}

// writeJSON answers 200 with a JSON body.
func writeJSON(w http.ResponseWriter, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// writeError answers e in the Responses API's family, OpenAI's.
func writeError(w http.ResponseWriter, e *providers.APIError) { e.Write(w, providers.FormatResponses) }
