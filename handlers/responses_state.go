package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelgate/modelgate/providers"
)

// resolveHistory puts the stored conversation before the turn's input and
// replaces item references with the items they name.
func (g *Gateway) resolveHistory(r *http.Request, id *Identity, t *providers.ResponsesTurn) error {
	if prev := t.Req.PreviousResponseID; prev != nil {
		return &providers.APIError{Status: http.StatusBadRequest, Param: "previous_response_id", Code: "previous_response_not_found",
			Message: fmt.Sprintf("Previous response with id %q not found.", *prev)}
	}
	return t.ResolveReferences(func(string) (json.RawMessage, bool) { return nil, false })
}

// keepResponse stores a completed response the client asked to keep.
func (g *Gateway) keepResponse(r *http.Request, info providers.RequestInfo) {}
