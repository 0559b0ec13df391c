package handlers

import (
	"github.com/modelgate/modelgate/handlers/responses"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgate/modelgate/internal/route"
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
		op      responses.ConversationOp
	}{
		{"POST " + conversationsPath, responses.CreateConversation},
		{"POST " + conversationsPath + "/{$}", responses.CreateConversation},
		{"GET " + one, responses.GetConversation},
		{"POST " + one, responses.UpdateConversation},
		{"DELETE " + one, responses.DeleteConversation},
		{"GET " + items, responses.ListConversationItems},
		{"POST " + items, responses.AddConversationItems},
		{"GET " + item, responses.GetConversationItem},
		{"DELETE " + item, responses.DeleteConversationItem},
	} {
		var h http.HandlerFunc
		if g != nil {
			h = g.rstate.ConversationHandler(rt.op, g.maxBody())
		}
		add(rt.pattern, h)
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
