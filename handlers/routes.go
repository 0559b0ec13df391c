package handlers

import (
	"net/http"
	"slices"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/internal/route"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/workctx"
)

// Owner is who on the site serves a path of the route table: the
// gateway, or a module before it, which asks the table too (Site).
type Owner uint8

// The owners of the site's paths.
const (
	OwnerGateway Owner = iota
	// OwnerOIDC is the OpenID Connect sign-in (package identity), served
	// by llm_auth before any key is asked for.
	OwnerOIDC
	// OwnerSCIM is SCIM provisioning (package scim), served by llm_auth
	// on its own bearer token.
	OwnerSCIM
	// OwnerAdmin is the organization API (llm_admin).
	OwnerAdmin
	// OwnerDashboard is the dashboard's files (llm_admin).
	OwnerDashboard
	// OwnerNone is a path nobody on the site serves whose callers read a
	// family of their own (Bedrock's control plane, which Claude Code's
	// Bedrock mode asks first): a refusal there is in that family.
	OwnerNone
	// OwnerSpendLinks is the approvers' chat links to spend increase
	// requests (llm_admin), under the dashboard's path.
	OwnerSpendLinks
)

// gatewayRoute is one entry of the site's route table: an http.ServeMux
// pattern, who serves it, the error family its callers read (nil: the
// caller's own, by its headers, callerFormat) and, for the
// gateway's own, its handler. An entry with a match func is one ServeMux
// cannot express (a Gemini model action's {model}:{action}, a Gemini
// client's models list on /v1 known by its key header, a Vertex publisher
// path): its pattern is documentation, and match decides.
type gatewayRoute struct {
	pattern string
	owner   Owner
	// method, when set, is the one method the path takes (GET takes HEAD
	// too); any other is a 405 in the entry's family.
	method string
	family apierror.Audience
	h      http.HandlerFunc
	match  func(r *http.Request) bool
	// public is the methods the path is answered with without a key
	// (health checks, the dashboard's page, approvers' chat links):
	// llm_auth passes them on unauthenticated.
	public methods
	// api: the entry is a path space of the APIs the gateway speaks, not
	// an endpoint: a request there that no other entry takes is a
	// client's mistake (a wrong base URL, a typo, a newer endpoint) and
	// gets a 404 its SDK can read, never the empty 200 of whatever
	// handler comes next.
	api bool
	// bare: the handler needs the ResponseWriter itself (a WebSocket
	// upgrade hijacks it; the MCP SDK flushes its streams through
	// http.Flusher), so it is not wrapped in the panic guard's writer;
	// what a WebSocket serves is guarded by the core's Serve.
	bare bool
	// resource: an OAuth protected resource (RFC 9728); a caller without
	// a key is told where to get one (Site.ProtectedResource).
	resource bool
}

// routed is what a lookup in the table finds: the entry's owner, family
// and public methods, and its handler, wrapped, for the gateway's own.
type routed struct {
	owner    Owner
	family   apierror.Audience
	public   methods
	h        http.HandlerFunc
	resource bool
}

// methods is a set of HTTP methods.
type methods uint8

const (
	mGet methods = 1 << iota
	mHead
	mPost
)

// has reports whether method is in m.
func (m methods) has(method string) bool {
	switch method {
	case http.MethodGet:
		return m&mGet != 0
	case http.MethodHead:
		return m&mHead != 0
	case http.MethodPost:
		return m&mPost != 0
	}
	return false
}

// routeTable is the site's routes as a lookup finds them, all built from
// the one table (siteRoutes): the matcher entries in order, the patterns
// without wildcards by path, the patterns that are a path and its subtree
// ("/model/{operation...}") by prefix, longest first, as ServeMux would
// choose, and the rest (patterns with a method or an inner wildcard) on a
// ServeMux. Only that last lookup costs allocations (ServeMux's matching
// allocates as it walks segments), and only when a request is served.
type routeTable struct {
	matchers []matcherRoute
	exact    map[string]routed
	prefixes []prefixRoute
	// muxPrefixes are the literal beginnings of the ServeMux's patterns:
	// a path under none is not the mux's.
	muxPrefixes []prefixRoute
	mux         *http.ServeMux
	// api is the API's path spaces (entries marked api): a path or
	// its subtree.
	api []prefixRoute
}

// matcherRoute is an entry ServeMux cannot express.
type matcherRoute struct {
	match func(r *http.Request) bool
	routed
}

// prefixRoute is a pattern that is a path and its subtree, or the literal
// beginning of a ServeMux pattern.
type prefixRoute struct {
	prefix string
	routed
}

// siteRoutes is every path the site answers: the gateway's (with their
// handlers when g is not nil) and the other modules'.
func (g *Gateway) siteRoutes() []gatewayRoute {
	return append(g.gatewayRoutes(), []gatewayRoute{
		{pattern: "/auth/oidc/{step...}", owner: OwnerOIDC},
		// The MCP authorization spec's metadata (identity/mcpauth.go).
		{pattern: "/.well-known/oauth-protected-resource", owner: OwnerOIDC},
		{pattern: "/.well-known/oauth-protected-resource/{resource...}", owner: OwnerOIDC},
		{pattern: "/.well-known/oauth-authorization-server", owner: OwnerOIDC},
		{pattern: "/scim/v2", owner: OwnerSCIM},
		{pattern: "/scim/v2/{resource...}", owner: OwnerSCIM},
		{pattern: "/v1/organizations", owner: OwnerAdmin, family: apierror.Anthropic},
		{pattern: "/v1/organizations/{call...}", owner: OwnerAdmin, family: apierror.Anthropic},
		{pattern: "/ui", owner: OwnerDashboard, public: mGet | mHead},
		{pattern: "/ui/{file...}", owner: OwnerDashboard, public: mGet | mHead},
		// An approvers' chat link to a spend increase request: its token
		// is the credential.
		{pattern: policy.SpendLinkPath + "{id...}", owner: OwnerSpendLinks, public: mGet | mHead},
		// HEAD / is a client's reachability probe (Route answers it).
		{pattern: "/", public: mHead},
		{pattern: "/inference-profiles", owner: OwnerNone, family: apierror.Bedrock},
		{pattern: "/inference-profiles/{profile...}", owner: OwnerNone, family: apierror.Bedrock},
		{pattern: "/foundation-models", owner: OwnerNone, family: apierror.Bedrock},
		{pattern: "/foundation-models/{model...}", owner: OwnerNone, family: apierror.Bedrock},
	}...)
}

// gatewayRoutes is every path the gateway answers. Each handler is wrapped
// once, in buildRoutes: the method check and the panic guard answer in
// the entry's family. With g nil the entries have no handlers.
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
		// The rest of the Messages and Gemini APIs' paths: a 404 in their
		// family (a newer endpoint, a wrong base URL).
		{pattern: "/v1/messages/{unknown...}", family: providers.FormatAnthropic, h: g.serveNotFound},
		{pattern: "/v1beta", family: providers.FormatGemini, h: g.serveNotFound},
		{pattern: "/v1beta/{unknown...}", family: providers.FormatGemini, h: g.serveNotFound},
		{pattern: "/health/liveliness", h: g.serveLiveness, public: mGet | mHead},
		{pattern: "/health/liveness", h: g.serveLiveness, public: mGet | mHead},
		{pattern: "/health/readiness", h: g.serveReadiness, public: mGet | mHead},
		{pattern: "/health", method: http.MethodGet, h: g.serveHealth},
		{pattern: "/v1/me", method: http.MethodGet, h: g.serveMe},
		// An MCP tool call's approval link (mcp/approval): its token is the
		// credential. Served when the gateway has approvals.
		{pattern: "/mcp-approvals/{token...}", h: g.approvalLinks(), public: mGet | mHead}, // POST: an approver signed in
		// A person's own accounts at auth: oauth MCP servers
		// (mcp/upstreamauth): a dashboard session's pages and links.
		{pattern: policy.MCPConnectPath + "{rest...}", h: g.mcpConnect()},
		// A loop breaker's resume link (breaker): its token is the
		// credential. Served when the gateway has a breaker.
		{pattern: breaker.ResumePath, h: g.resumeLink(), public: mGet | mPost},
		// The APIs' path spaces: what no entry above takes is a 404 in
		// the caller's family.
		{pattern: "/v1", api: true}, {pattern: "/v1/{unknown...}", api: true},
		{pattern: "/v1beta/{unknown...}", api: true}, {pattern: "/chat/{unknown...}", api: true},
		{pattern: "/responses/{unknown...}", api: true}, {pattern: "/embeddings/{unknown...}", api: true},
		{pattern: "/models/{unknown...}", api: true}, {pattern: "/messages", api: true}, {pattern: "/messages/{unknown...}", api: true},
	}
	if g == nil {
		// The table as the modules before the gateway read it (Site):
		// who serves what, no handlers.
		return append(append(append(rt, mcpRoutes(nil)...), g.storedResponseRoutes()...), g.conversationRoutes()...)
	}
	if m := g.opts.MCP; m != nil {
		rt = append(rt, mcpRoutes(g.boundedBody(m.ServeHTTP))...)
	}
	if wc := g.opts.WorkContexts; wc != nil {
		rt = append(rt, gatewayRoute{pattern: workctx.Path, h: wc.ServeHTTP})
	}
	if b := g.batches; b != nil {
		// The batch APIs answer in their own families (package batch).
		for _, e := range []struct {
			prefix string
			family apierror.Audience
		}{{"/v1/messages/batches", providers.FormatAnthropic}, {"/v1/files", providers.FormatOpenAI}, {"/v1/batches", providers.FormatOpenAI}} {
			rt = append(rt, gatewayRoute{pattern: e.prefix, family: e.family, h: b.ServeHTTP},
				gatewayRoute{pattern: e.prefix + "/{rest...}", family: e.family, h: b.ServeHTTP})
		}
	}
	if at := g.opts.AgentTelemetry; at != nil {
		rt = append(rt, gatewayRoute{pattern: "/v1/logs", h: at.ServeLogs}, gatewayRoute{pattern: "/v1/metrics", h: at.ServeMetrics})
	}
	return append(append(rt, g.storedResponseRoutes()...), g.conversationRoutes()...)
}

// boundedBody bounds h's request bodies as a model request's are
// (MaxRequestBody): the MCP SDK reads a whole tool call's body into memory
// and answers 413 to the bound's error.
func (g *Gateway) boundedBody(h http.HandlerFunc) http.HandlerFunc {
	limit := g.opts.MaxRequestBody
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Body != nil {
			r.Body = http.MaxBytesReader(w, r.Body, limit)
		}
		h(w, r)
	}
}

// mcpRoutes are the MCP gateway's paths, protected resources whose
// clients sign in by OAuth when llm_auth has an oidc block.
func mcpRoutes(h http.HandlerFunc) []gatewayRoute {
	return []gatewayRoute{{pattern: "/mcp", h: h, bare: true, resource: true}, {pattern: "/mcp/{server...}", h: h, bare: true, resource: true}}
}

// buildRoutes builds the route table once, with the method check and the
// panic guard around every handler.
func (g *Gateway) buildRoutes() {
	g.notFound = g.guard(nil, g.serveNotFound)
	g.routes = compileRoutes(g.siteRoutes(), func(e gatewayRoute) http.HandlerFunc {
		h := e.h
		if e.method != "" {
			h = g.only(e.method, e.family, h)
		}
		if !e.bare {
			h = g.guard(e.family, h)
		}
		return h
	}, g.notFound)
	g.responses = g.guard(providers.FormatResponses, g.only(http.MethodPost, providers.FormatResponses, func(w http.ResponseWriter, r *http.Request) {
		g.serveHTTP(w, r, providers.FormatResponses)
	}))
	g.head = func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) }
}

// compileRoutes builds the lookups of the table rts; wrap makes an
// entry's handler (nil: the table has no handlers, for Site), notFound
// answers what is under
// a ServeMux pattern's beginning but matches no pattern.
func compileRoutes(rts []gatewayRoute, wrap func(gatewayRoute) http.HandlerFunc, notFound http.HandlerFunc) *routeTable {
	t := &routeTable{exact: map[string]routed{}, mux: http.NewServeMux()}
	// A path is looked up by itself only when one method-less pattern
	// without wildcards is all the table has for it.
	byMethod := map[string]bool{}
	for _, e := range rts {
		if _, p, ok := strings.Cut(e.pattern, " "); ok && e.match == nil {
			byMethod[p] = true
		}
	}
	serveMux := t.mux.ServeHTTP
	for _, e := range rts {
		var h http.HandlerFunc
		if e.h != nil && wrap != nil {
			h = wrap(e)
		}
		ro := routed{owner: e.owner, family: e.family, public: e.public, h: h, resource: e.resource}
		if e.api {
			p := subtree(e.pattern)
			if p == "" {
				p = e.pattern
			}
			t.api = append(t.api, prefixRoute{prefix: p})
			continue
		}
		if e.match != nil {
			t.matchers = append(t.matchers, matcherRoute{e.match, ro})
			continue
		}
		switch p := e.pattern; {
		case !strings.ContainsAny(p, "{ ") && !byMethod[p]:
			t.exact[p] = ro
		case subtree(p) != "":
			t.prefixes = append(t.prefixes, prefixRoute{subtree(p), ro})
		default:
			if h != nil {
				t.mux.HandleFunc(p, h)
			}
			_, lit, ok := strings.Cut(p, " ")
			if !ok {
				lit = p
			}
			lit, _, _ = strings.Cut(lit, "{")
			if !slices.ContainsFunc(t.muxPrefixes, func(m prefixRoute) bool { return m.prefix == lit }) {
				// Which pattern takes the path is the mux's to say; a
				// path under the beginning that none takes is answered in
				// the caller's family.
				ro.h, ro.family = serveMux, nil
				t.muxPrefixes = append(t.muxPrefixes, prefixRoute{lit, ro})
			}
		}
	}
	slices.SortFunc(t.prefixes, func(a, b prefixRoute) int { return len(b.prefix) - len(a.prefix) })
	if notFound != nil {
		t.mux.HandleFunc("/", notFound)
	}
	return t
}

// lookup finds r's entry in the table.
func (t *routeTable) lookup(r *http.Request) (routed, bool) {
	for _, m := range t.matchers {
		if m.match(r) {
			return m.routed, true
		}
	}
	p := r.URL.Path
	if e, ok := t.exact[p]; ok {
		return e, true
	}
	for _, pr := range t.prefixes {
		if strings.HasPrefix(p, pr.prefix) {
			return pr.routed, true
		}
	}
	// ServeMux would redirect a path that is not canonical; no endpoint
	// is named that way.
	if route.Canonical(r.URL.EscapedPath()) {
		for _, pr := range t.muxPrefixes {
			if strings.HasPrefix(p, pr.prefix) {
				return pr.routed, true
			}
		}
	}
	return routed{}, false
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
	if e, ok := g.routes.lookup(r); ok && e.owner == OwnerGateway && e.h != nil {
		return e.h, true
	}
	if g.opts.AnswerAllPaths || g.routes.underAPI(p) {
		return g.notFound, true
	}
	return nil, false
}

// underAPI reports whether p is in one of the table's API path spaces
// (its entries marked api). Leading slashes are folded first, so
// "//v1/chat/completions" counts: it is a base URL with a trailing slash,
// not a path for another handler.
func (t *routeTable) underAPI(p string) bool {
	for len(p) > 1 && p[1] == '/' {
		p = p[1:]
	}
	for _, a := range t.api {
		if p == a.prefix || strings.HasSuffix(a.prefix, "/") && strings.HasPrefix(p, a.prefix) {
			return true
		}
	}
	return false
}

// public reports whether r is answered without a key: its entry names
// r's method public, and r names it as it is, without dot segments or
// doubled slashes. Public entries are served only under their own names;
// the lookup's prefix test on the raw path would let
// "/mcp-approvals/../v1/…" through keyless to whatever cleans it later.
func (t *routeTable) public(r *http.Request) bool {
	e, ok := t.lookup(r)
	return ok && e.public.has(r.Method) && route.Canonical(r.URL.Path)
}

// Public reports whether r is answered without a key (the table's public
// entries), for a gateway running without llm_auth's identity.
func (g *Gateway) Public(r *http.Request) bool { return g.routes.public(r) }

// Site is the site's route table as the modules before llm_gateway read
// it (llm_auth, llm_admin): who serves a path, and the error family its
// callers read. It is built from the same table as the gateway's routes.
type Site struct{ t *routeTable }

// NewSite builds the site's route table.
func NewSite() *Site {
	var g *Gateway
	return &Site{t: compileRoutes(g.siteRoutes(), nil, nil)}
}

// Public reports whether r is answered without a key: Claude Code's
// reachability probe, the liveness and readiness checks, the dashboard's
// page and approvers' chat links, each for the methods its entry names.
func (s *Site) Public(r *http.Request) bool { return s.t.public(r) }

// Owner is who serves r's path: OwnerGateway also for a path no entry
// takes (the gateway answers it, or the next handler does).
func (s *Site) Owner(r *http.Request) Owner {
	e, _ := s.t.lookup(r)
	return e.owner
}

// ProtectedResource reports whether r's path is an OAuth protected
// resource (the MCP gateway's).
func (s *Site) ProtectedResource(r *http.Request) bool {
	e, _ := s.t.lookup(r)
	return e.resource
}

// WriteError answers e in the error family r's entry names, or the
// caller's (callerFormat) where it names none. A refusal written before
// any handler ran (a missing key) uses it, so a caller gets the shape the
// endpoint itself would have answered in.
func (s *Site) WriteError(w http.ResponseWriter, r *http.Request, e *apierror.Error) {
	re, _ := s.t.lookup(r)
	e.Write(w, tableFamily(s.t, re.family, r))
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

// resumeLink is the loop breaker's resume link handler: without a
// breaker, the gateway's 404, as the link is answered without a key and
// must not pass on keyless to what follows on the site. nil for Site.
func (g *Gateway) resumeLink() http.HandlerFunc {
	switch {
	case g == nil:
		return nil
	case g.opts.Breaker == nil:
		return g.serveNotFound
	}
	return g.serveResume
}

// mcpConnect is the MCP connect pages' handler: without auth: oauth
// servers, the gateway's 404. nil for Site.
func (g *Gateway) mcpConnect() http.HandlerFunc {
	switch {
	case g == nil:
		return nil
	case g.opts.MCPConnect == nil:
		return g.serveNotFound
	}
	return g.opts.MCPConnect.ServeHTTP
}

// approvalLinks is the MCP approval links' handler: without approvals,
// the gateway's 404 (see resumeLink). nil for Site.
func (g *Gateway) approvalLinks() http.HandlerFunc {
	switch {
	case g == nil:
		return nil
	case g.opts.ApprovalLinks == nil:
		// Answered without a key: a 404 here, not passed on (resumeLink).
		return g.serveNotFound
	}
	return g.opts.ApprovalLinks.ServeHTTP
}
