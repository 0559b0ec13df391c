package handlers

import (
	"net/http"

	"github.com/modelgate/modelgate/handlers/responses"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// The Responses API's stored state is package responses; the core reaches
// it through responseState (core.go). What is here is the door's part:
// the route-table entries of a stored response.

// keepResponse stores a finished response the client asked to keep
// (responses.State.Keep), before the client has its end.
func (g *Gateway) keepResponse(id *policy.Identity, info providers.RequestInfo, rec *ledger.Record) {
	g.state.Keep(id, info, rec)
}

// storedResponseRoutes are the entries of the route table for a stored
// response, under /v1/responses and /responses: one pattern per method
// and call (package responses answers them), and, as for the
// Conversations API, the method-less and HEAD patterns that make a method
// no route takes a 405 naming the ones it does, in OpenAI's family.
func (g *Gateway) storedResponseRoutes() []gatewayRoute {
	var rts []gatewayRoute
	add := func(pattern string, h http.HandlerFunc) {
		rts = append(rts, gatewayRoute{pattern: pattern, family: providers.FormatResponses, h: g.routableConversation(h)})
	}
	out := func(w http.ResponseWriter) responses.Out { return httpSink(w, providers.FormatResponses) }
	for _, root := range []string{"/v1/responses", "/responses"} {
		one := root + "/{id}"
		for _, rt := range []struct {
			pattern string
			op      responses.StoredOp
		}{
			{"GET " + one, responses.GetResponse},
			{"DELETE " + one, responses.DeleteResponse},
			{"GET " + one + "/input_items", responses.ResponseInputItems},
			{"POST " + one + "/cancel", responses.CancelResponse},
		} {
			var h http.HandlerFunc
			if g != nil {
				h = g.rstate.StoredHandler(rt.op, out)
			}
			add(rt.pattern, h)
		}
		for _, na := range []struct{ path, allow string }{
			{one, "GET, DELETE"}, {one + "/input_items", "GET"}, {one + "/cancel", "POST"},
		} {
			h := conversationNotAllowed(na.allow)
			add("HEAD "+na.path, h)
			add(na.path, h)
		}
	}
	return rts
}
