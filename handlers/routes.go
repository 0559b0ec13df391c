package handlers

import (
	"net/http"
	"slices"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/internal/route"
	"github.com/modelgate/modelgate/providers"
)

// gatewayRoute is one entry of the gateway's route table: an
// http.ServeMux pattern, the error family its callers read (nil: the
// caller's own, by its path and headers, ClientFormat) and its handler.
// An entry with a match func is one ServeMux cannot express (a Gemini
// model action's {model}:{action}, a Gemini client's models list on /v1
// known by its key header, a Vertex publisher path): its pattern is
// documentation, and match decides.
type gatewayRoute struct {
	pattern string
	// method, when set, is the one method the path takes (GET takes HEAD
	// too); any other is a 405 in the entry's family.
	method string
	family apierror.Audience
	h      http.HandlerFunc
	match  func(r *http.Request) bool
	// bare: the handler needs the ResponseWriter itself (a WebSocket
	// upgrade hijacks it; the MCP SDK flushes its streams through
	// http.Flusher), so it is not wrapped in the panic guard's writer;
	// what a WebSocket serves is guarded by the core's Serve.
	bare bool
}

// routeTable is the gateway's routes as Route looks them up, all built
// from the one table (gatewayRoutes): the matcher entries in order, the
// patterns without wildcards by path, the patterns that are a path and
// its subtree ("/model/{operation...}") by prefix, longest first, as
// ServeMux would choose, and the rest (patterns with a method or an inner
// wildcard) on a ServeMux. Only that last lookup costs allocations
// (ServeMux's matching allocates as it walks segments).
type routeTable struct {
	matchers []gatewayRoute
	exact    map[string]http.HandlerFunc
	prefixes []prefixRoute
	// muxPrefixes are the literal beginnings of the ServeMux's patterns:
	// a path under none is not the mux's.
	muxPrefixes []string
	mux         *http.ServeMux
	// serveMux is mux.ServeHTTP, bound once: a method value made per
	// request would cost an allocation.
	serveMux http.HandlerFunc
}

// prefixRoute is a pattern that is a path and its subtree.
type prefixRoute struct {
	prefix string
	h      http.HandlerFunc
}

// gatewayRoutes is every path the gateway answers. Each handler is wrapped
// once, in buildRoutes: the method check and the panic guard answer in
// the entry's family.
func (g *Gateway) gatewayRoutes() []gatewayRoute {
	post := func(cf providers.Format) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) { g.serveHTTP(w, r, cf) }
	}
	responses := func(w http.ResponseWriter, r *http.Request) {
		if isWebSocketUpgrade(r) {
			g.serveResponsesWebSocket(w, r)
			return
		}
		g.responses(w, r)
	}
	rt := []gatewayRoute{
		// Documented matchers, tried first.
		{pattern: "GET /v1/models/{model...} (x-goog-api-key or ?key=)", family: providers.FormatGemini, method: http.MethodGet, h: g.serveGeminiModels, match: geminiModelsOnV1},
		{pattern: "/v1beta/models/{model}:{action} and /v1/models/{model}:{action}", family: providers.FormatGemini, h: g.serveGemini, match: geminiCall},
		{pattern: "POST /v1/projects/{p}/locations/{l}/publishers/anthropic/models/{m}:{action}", family: providers.FormatAnthropic, h: g.serveVertex, match: func(r *http.Request) bool { return vertexPath(r.URL.Path) }},

		{pattern: "/chat/completions", family: providers.FormatOpenAI, method: http.MethodPost, h: post(providers.FormatOpenAI)},
		{pattern: "/v1/chat/completions", family: providers.FormatOpenAI, method: http.MethodPost, h: post(providers.FormatOpenAI)},
		{pattern: "/v1/messages", family: providers.FormatAnthropic, method: http.MethodPost, h: post(providers.FormatAnthropic)},
		{pattern: "/v1/messages/count_tokens", family: providers.FormatAnthropic, method: http.MethodPost, h: g.serveCountTokens},
		{pattern: "/v1/responses", family: providers.FormatResponses, h: responses, bare: true},
		{pattern: "/responses", family: providers.FormatResponses, h: responses, bare: true},
		{pattern: "/v1/responses/input_tokens", family: providers.FormatResponses, method: http.MethodPost, h: g.serveInputTokens},
		{pattern: "/responses/input_tokens", family: providers.FormatResponses, method: http.MethodPost, h: g.serveInputTokens},
		{pattern: "/v1/responses/compact", family: providers.FormatResponses, method: http.MethodPost, h: g.serveCompact},
		{pattern: "/responses/compact", family: providers.FormatResponses, method: http.MethodPost, h: g.serveCompact},
		{pattern: "/v1/responses/{rest...}", family: providers.FormatResponses, h: g.serveStoredResponse},
		{pattern: "/responses/{rest...}", family: providers.FormatResponses, h: g.serveStoredResponse},
		{pattern: "/v1/embeddings", family: providers.FormatEmbeddings, method: http.MethodPost, h: post(providers.FormatEmbeddings)},
		{pattern: "/embeddings", family: providers.FormatEmbeddings, method: http.MethodPost, h: post(providers.FormatEmbeddings)},
		// The models list and lookup answer in the shape of the SDK that
		// asks (modelsFormat): their family is the caller's.
		{pattern: "/v1/models", method: http.MethodGet, h: g.serveModels},
		{pattern: "/models", method: http.MethodGet, h: g.serveModels},
		{pattern: "/v1/models/{model...}", method: http.MethodGet, h: g.serveModel},
		{pattern: "/models/{model...}", method: http.MethodGet, h: g.serveModel},
		{pattern: "/v1beta/models", family: providers.FormatGemini, method: http.MethodGet, h: g.serveGeminiModels},
		{pattern: "/v1beta/models/{model...}", family: providers.FormatGemini, method: http.MethodGet, h: g.serveGeminiModels},
		{pattern: "/model/{operation...}", family: apierror.Bedrock, h: g.serveBedrock},
		{pattern: "/health/liveliness", h: g.serveLiveness},
		{pattern: "/health/liveness", h: g.serveLiveness},
		{pattern: "/health/readiness", h: g.serveReadiness},
		{pattern: "/health", method: http.MethodGet, h: g.serveHealth},
		{pattern: "/v1/me", method: http.MethodGet, h: g.serveMe},
	}
	if m := g.opts.MCP; m != nil {
		rt = append(rt, gatewayRoute{pattern: "/mcp", h: m.ServeHTTP, bare: true}, gatewayRoute{pattern: "/mcp/{server...}", h: m.ServeHTTP, bare: true})
	}
	if at := g.opts.AgentTelemetry; at != nil {
		rt = append(rt, gatewayRoute{pattern: "/v1/logs", h: at.ServeLogs}, gatewayRoute{pattern: "/v1/metrics", h: at.ServeMetrics})
	}
	return append(rt, g.conversationRoutes()...)
}

// buildRoutes builds the route table once, with the panic guard around
// every handler.
func (g *Gateway) buildRoutes() {
	g.notFound = g.guard(nil, g.serveNotFound)
	t := &routeTable{exact: map[string]http.HandlerFunc{}, mux: http.NewServeMux()}
	rts := g.gatewayRoutes()
	// A path is looked up by itself only when one method-less pattern
	// without wildcards is all the table has for it.
	byMethod := map[string]bool{}
	for _, e := range rts {
		if _, p, ok := strings.Cut(e.pattern, " "); ok && e.match == nil {
			byMethod[p] = true
		}
	}
	for _, e := range rts {
		h := e.h
		if e.method != "" {
			h = g.only(e.method, e.family, h)
		}
		if !e.bare {
			h = g.guard(e.family, h)
		}
		if e.match != nil {
			t.matchers = append(t.matchers, gatewayRoute{pattern: e.pattern, family: e.family, h: h, match: e.match})
			continue
		}
		switch p := e.pattern; {
		case !strings.ContainsAny(p, "{ ") && !byMethod[p]:
			t.exact[p] = h
		case subtree(p) != "":
			t.prefixes = append(t.prefixes, prefixRoute{subtree(p), h})
		default:
			t.mux.HandleFunc(p, h)
			_, lit, ok := strings.Cut(p, " ")
			if !ok {
				lit = p
			}
			lit, _, _ = strings.Cut(lit, "{")
			if !slices.Contains(t.muxPrefixes, lit) {
				t.muxPrefixes = append(t.muxPrefixes, lit)
			}
		}
	}
	slices.SortFunc(t.prefixes, func(a, b prefixRoute) int { return len(b.prefix) - len(a.prefix) })
	// What is under a mux pattern's beginning but matches no pattern is a
	// path the gateway does not have.
	t.mux.HandleFunc("/", g.notFound)
	t.serveMux = t.mux.ServeHTTP
	g.routes = t
	g.responses = g.guard(providers.FormatResponses, g.only(http.MethodPost, providers.FormatResponses, func(w http.ResponseWriter, r *http.Request) {
		g.serveHTTP(w, r, providers.FormatResponses)
	}))
	g.head = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
}

// Route returns the handler for r, or false when the path is not the
// gateway's and the next Caddy handler should see it. The handler turns a
// panic into a 500 (see guard).
func (g *Gateway) Route(r *http.Request) (http.HandlerFunc, bool) {
	p := r.URL.Path
	if p == "/" {
		// HEAD / is a client's reachability probe; anything else at the
		// root is another site's unless this one answers every path.
		if r.Method == http.MethodHead {
			return g.head, true
		}
		if g.opts.AnswerAllPaths {
			return g.notFound, true
		}
		return nil, false
	}
	t := g.routes
	for _, m := range t.matchers {
		if m.match(r) {
			return m.h, true
		}
	}
	if h, ok := t.exact[p]; ok {
		return h, true
	}
	for _, pr := range t.prefixes {
		if strings.HasPrefix(p, pr.prefix) {
			return pr.h, true
		}
	}
	// ServeMux would redirect a path that is not canonical; no endpoint
	// is named that way.
	if route.Canonical(r.URL.EscapedPath()) {
		for _, lit := range t.muxPrefixes {
			if strings.HasPrefix(p, lit) {
				return t.serveMux, true
			}
		}
	}
	if g.opts.AnswerAllPaths || underAPI(p) {
		return g.notFound, true
	}
	return nil, false
}

// subtree is the path a pattern covers with its subtree, "/model/" for
// "/model/{operation...}", or "" when the pattern is anything else (a
// method, an inner wildcard).
func subtree(pattern string) string {
	i := strings.IndexByte(pattern, '{')
	if i < 0 || strings.ContainsRune(pattern, ' ') || !strings.HasSuffix(pattern, "...}") ||
		strings.IndexByte(pattern[i+1:], '{') >= 0 || pattern[i-1] != '/' {
		return ""
	}
	return pattern[:i]
}
