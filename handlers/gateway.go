package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/modelgate/modelgate/handlers/responses"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/agentotel"
	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/batch"
	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/forge"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/secretscan"
	"github.com/modelgate/modelgate/telemetry"
	"github.com/modelgate/modelgate/tokencount"
	"github.com/modelgate/modelgate/upstream"
)

// GatewayOptions configures a Gateway. Models is required.
type GatewayOptions struct {
	Models *modellist.Config
	// Telemetry makes the OpenTelemetry spans and OTLP metrics of each
	// request; nil: spans without content, no OTLP metrics.
	Telemetry *telemetry.Tracer
	// MaxRequestBody bounds client bodies; larger ones get 413. Default 32 MiB.
	MaxRequestBody int64
	// BodyMemory bounds the request-body bytes held at once over all
	// requests (buffers outgrown while reading included); a request that
	// finds no room within BodyMemoryWait gets 503 with Retry-After.
	// Default 8 × MaxRequestBody (256 MiB at the default limit); it is
	// raised to MinBodyMemory(MaxRequestBody) so one body always fits.
	BodyMemory int64
	// BodyMemoryWait is how long a request waits for body memory.
	// Default 1 s.
	BodyMemoryWait time.Duration
	// DefaultMaxTokens is sent to Anthropic when an OpenAI client gave no
	// limit (Anthropic requires one), and to any upstream for a request
	// under a budget that gave none, unless the alias's deployments set
	// model_info.max_output_tokens (serve). Default 4096.
	DefaultMaxTokens int64
	// Timeout bounds a whole upstream request when neither the deployment
	// nor router_settings set one. Default 10m.
	Timeout time.Duration
	// MaxConcurrentPerKey is the max_parallel of a key that sets none of
	// its own (the deprecated max_concurrent_per_key, folded into
	// max_parallel): counted by Rates like any max_parallel, shared
	// through Redis when Rates is; a gateway without Rates counts it per
	// process. 0: none.
	MaxConcurrentPerKey int
	// WebSocketLifetime bounds how long one Responses WebSocket stays
	// open; at its end the connection is closed once its turn in progress
	// has finished. Default DefaultWebSocketLifetime.
	WebSocketLifetime time.Duration
	// MaxBackgroundPerKey bounds the background Responses one key may have
	// running on one instance; 0 is DefaultMaxBackgroundPerKey.
	MaxBackgroundPerKey int
	// States holds deployment state across reloads; nil gives private state.
	States   *States
	Recorder Recorder // nil: nothing is recorded
	Observer Observer // nil: nothing is observed
	// Ready reports whether the ledger can take writes (readiness probe).
	Ready func() error
	// MCP serves /mcp and /mcp/{server}, the MCP gateway, to an
	// authenticated caller; nil: no MCP server is configured and those
	// paths are not the gateway's.
	MCP http.Handler
	// MCPNotConnected names the MCP servers with no live session, for the
	// readiness probe; nil when no MCP server is configured. They do not
	// make the instance unready: model traffic does not need them.
	MCPNotConnected func() []string
	// Client builds the HTTP client for a deployment; nil (or a nil
	// result) uses a default client shared per upstream server and TLS
	// setting. Tests inject clients here.
	Client  func(d *modellist.Deployment) *http.Client
	Counter *tokencount.Counter
	Now     func() time.Time
	// Durable writes each request's record to the database before the
	// client has the end of its answer (the Recorder must be a Committer):
	// for teams that bill from the ledger, a crash cannot lose a served
	// request. It costs one insert's wait per request, shared by the
	// requests that finish together.
	Durable bool
	// LedgerDown reports an error while the ledger is known to be failing
	// writes. Under Durable, chat requests are then refused with 503 and
	// Retry-After instead of being served without their record. nil: never.
	LedgerDown func() error
	// Responses is where Responses API state is kept (store: true); it
	// returns nil while the ledger is not open, and a nil func means no
	// state: previous_response_id and item_reference are then unknown.
	Responses func() ledger.ResponseStore
	// BackgroundRuns is the background responses running on this
	// instance; it outlives a config (caddymodule keeps it beside
	// States), so a reload can still cancel them. nil: a registry of
	// this gateway's own.
	BackgroundRuns *responses.Runs
	// Budgets admits requests against the budgets of their key, workspace
	// and session; nil: no budgets.
	Budgets *policy.Budgets
	// Controls know the workspaces' limits; nil: none.
	Controls *policy.Controls
	// Site names this gateway's site among those registered in Controls:
	// its batches are stored under it, and their items run as its keys.
	Site string
	// Rates applies the keys' and workspaces' rpm, tpm and max_parallel;
	// nil: none.
	Rates *policy.RateLimits
	// CacheWatch sees every finished request and alerts when a session
	// keeps writing a prompt cache it never reads; nil: no such alert.
	CacheWatch *policy.CacheWatch
	// Breaker watches agent sessions for loops and runaway spend
	// (package breaker); nil: none is watched.
	Breaker *breaker.Breaker
	// AnswerAllPaths makes every path the gateway does not serve a 404,
	// not only those under the API's prefixes: for `caddy gateway`, whose
	// route has nothing after the gateway.
	AnswerAllPaths bool
	// AgentTelemetry answers POST /v1/logs and /v1/metrics, coding agents'
	// own OpenTelemetry export; nil: those paths are not the gateway's.
	AgentTelemetry *agentotel.Receiver
	// Batches sets the batch APIs' retention, workers and limits; they
	// are served whenever there is a ledger (Responses).
	Batches batch.Options
	// PublicURL is the gateway's base URL as people's browsers reach it
	// (the modelgate app's public_url), the base of the links it posts
	// (the loop breaker's resume link); "" posts none.
	PublicURL string
	// ApprovalLinks serves the approve and deny links of MCP tool-call
	// approvals (/mcp-approvals/…, package mcp/approval); nil: none.
	ApprovalLinks http.Handler
	// MCPConnect serves a person's connections to auth: oauth MCP
	// servers (mcp/upstreamauth), nil when there are none.
	MCPConnect http.Handler
	// WorkContexts takes sessions' work contexts: POST /v1/work/context
	// from the agents' hooks, and the X-Modelgate-Repo and
	// X-Modelgate-Branch headers; nil: neither.
	WorkContexts *forge.Contexts

	// Secrets is the secret firewall (secrets.go); nil: off for every
	// alias. SecretsFor, when set, decides a deployment's action (the
	// Caddyfile's secrets block); otherwise its entry's SecretsPolicy.
	// SecretEvents sees each detection.
	Secrets      *secretscan.Firewall
	SecretsFor   func(alias string, d *modellist.Deployment) modellist.SecretsAction
	SecretEvents func(secretscan.Event)
}

// Gateway serves the chat, messages, models, token-count and health
// endpoints for one loaded model list.
type Gateway struct {
	opts GatewayOptions
	// stopSweep ends the sweep for background responses whose instance
	// stopped (responses.State.SweepLapsed); nil without a responses
	// store.
	stopSweep context.CancelFunc
	// rstate is the Responses API's stored state (package responses);
	// state is the same, as the core calls it.
	rstate *responses.State
	state  responseState
	// retired is closed by Close, when the config that built this
	// gateway is replaced: the Responses WebSockets it admitted close
	// (1012) instead of serving on under a config no request is admitted
	// by any more.
	retired    chan struct{}
	retireOnce sync.Once
	models     *modellist.Config
	backends   map[string][]*upstream.Deployment // alias → deployments
	chains     map[string][]aliasLink            // alias → itself, then its fallbacks
	selector   upstream.Selector                 // the routing strategy
	// affinity pins sessions to deployments; nil when
	// router_settings.session_affinity is off.
	affinity *upstream.Affinity
	// bounds: alias → what its chain fixes for budgets (see estimate),
	// fixed with the chains.
	bounds map[string]aliasBounds
	// routes is the route table (routes.go), built once.
	routes *routeTable
	// parsers reads a request body of each client format (indexed by
	// providers.Format), chosen once in buildParsers.
	parsers [providers.FormatCount]requestParser
	head    http.HandlerFunc // HEAD /, Claude Code's reachability probe
	// notFound answers every path under the API's prefixes no route
	// takes.
	notFound http.HandlerFunc
	// responses serves POST /v1/responses; a WebSocket's turns go through
	// the core instead.
	responses  http.HandlerFunc
	tooLarge   string // the 413 message, fixed by the limit
	memoryFull string // the 503 message when body memory is full
	bodyMem    *bodyMemory
	byID       map[string]*upstream.Deployment
	states     *States
	obs        Observer
	counter    *tokencount.Counter
	now        func() time.Time

	bodyPool   sync.Pool // *[]byte
	readerPool sync.Pool // *bufio.Reader
	outPool    sync.Pool // *[]byte
	zstdPool   sync.Pool // *zstd.Decoder, for zstd request bodies

	// batches serves the batch APIs and runs their items (batch_runner.go);
	// nil without a ledger.
	batches *batch.Service
	// secretActions: alias → the secret firewall's action (secrets.go).
	secretActions map[string]secretscan.Action
}

// NewGateway builds the gateway and one HTTP client per upstream base.
func NewGateway(o GatewayOptions) *Gateway {
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = 32 << 20
	}
	if o.BodyMemory <= 0 {
		o.BodyMemory = defaultBodyMemory(o)
	}
	o.BodyMemory = max(o.BodyMemory, MinBodyMemory(o.MaxRequestBody))
	if o.BodyMemoryWait <= 0 {
		o.BodyMemoryWait = time.Second
	}
	if o.DefaultMaxTokens <= 0 {
		o.DefaultMaxTokens = 4096
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
	if o.WebSocketLifetime <= 0 {
		o.WebSocketLifetime = DefaultWebSocketLifetime
	}
	g := &Gateway{
		opts:     o,
		models:   o.Models,
		backends: make(map[string][]*upstream.Deployment),
		byID:     make(map[string]*upstream.Deployment),
		states:   o.States,
		obs:      o.Observer,
		counter:  o.Counter,
		now:      o.Now,
		retired:  make(chan struct{}),
	}
	if g.states == nil {
		g.states = NewStates()
	}
	if g.obs == nil {
		g.obs = nopObserver{}
	}
	if g.now == nil {
		g.now = time.Now
	}
	if g.counter == nil {
		g.counter = tokencount.New()
	}
	clients := upstream.NewClientSet()
	for _, d := range o.Models.Deployments {
		var c *http.Client
		if o.Client != nil {
			c = o.Client(d)
		}
		if c == nil {
			c = clients.ForDeployment(d)
		}
		b := upstream.New(d, upstream.Options{Client: c, State: g.states.Get(d.ID), Router: o.Models.Router,
			DefaultTimeout: o.Timeout, DefaultMaxTokens: o.DefaultMaxTokens})
		g.backends[d.Alias] = append(g.backends[d.Alias], b)
		g.byID[d.ID] = b
	}
	g.selector = upstream.NewSelector(o.Models.Router.RoutingStrategy)
	if o.Models.Router.SessionAffinity {
		g.affinity = g.states.affinity
	}
	g.chains = make(map[string][]aliasLink, len(g.backends))
	g.bounds = make(map[string]aliasBounds, len(g.backends))
	for _, alias := range o.Models.Aliases() {
		var chain []aliasLink
		for _, a := range append([]string{alias}, o.Models.FallbacksFor(alias)...) {
			if l := g.linkFor(a); len(l.deployments) > 0 {
				chain = append(chain, l)
			}
		}
		g.chains[alias] = chain
		g.bounds[alias] = boundsOf(chain)
	}
	if o.MaxConcurrentPerKey > 0 && o.Rates == nil {
		// The folded max_concurrent_per_key counts as a max_parallel
		// even without the app's limits: per process.
		g.opts.Rates = policy.NewRateLimits(nil, 0, nil, nil)
	}
	runs := o.BackgroundRuns
	if runs == nil {
		runs = responses.NewRuns()
	}
	g.rstate = &responses.State{Store: o.Responses, Runs: runs, Now: func() time.Time { return g.now() }, Redact: g.redactStored,
		Report: func(alias, err string) { g.obs.Attempt(Attempt{Alias: alias, Err: err}) }}
	g.state = g.rstate
	g.buildSecretActions()
	g.buildParsers()
	g.batches = g.newBatches()
	g.buildRoutes()
	g.tooLarge = fmt.Sprintf("request body exceeds the gateway's limit of %d bytes", o.MaxRequestBody)
	g.memoryFull = fmt.Sprintf("the gateway holds its limit of %d bytes of request bodies at once; retry shortly", o.BodyMemory)
	g.bodyMem = newBodyMemory(o.BodyMemory)
	g.bodyPool.New = func() any { return new([]byte) }
	// Both buffers live as long as a stream does, idle or not: at 5,000
	// open streams a 32 KB reader alone cost 160 MB. Stream events are
	// well under 4 KB; longer lines are gathered by the event reader and
	// the output buffer grows on demand and returns to the pool grown.
	g.readerPool.New = func() any { return bufio.NewReaderSize(nil, 4<<10) }
	g.outPool.New = func() any { b := make([]byte, 0, 1<<10); return &b }
	g.zstdPool.New = func() any { return newZstdDecoder(o.MaxRequestBody) }
	if o.Responses != nil {
		var ctx context.Context
		ctx, g.stopSweep = context.WithCancel(context.Background())
		go g.rstate.SweepLapsed(ctx)
	}
	return g
}

// MinBodyMemory is the least body memory a gateway takes for a body limit:
// room for one body at the limit read with doubling buffers (about twice
// the limit) and a pooled buffer.
func MinBodyMemory(maxRequestBody int64) int64 {
	return 2*maxRequestBody + 2*maxPooledBody
}

// Close releases idle upstream connections and closes the Responses
// WebSockets served under this gateway's config (each once its turn in
// progress ends, as an HTTP request in flight ends under its config).
// Caddy calls it when a reload replaces the config; Caddy's server
// shutdown does not close a hijacked connection.
func (g *Gateway) Close() {
	g.retireOnce.Do(func() { close(g.retired) })
	if g.stopSweep != nil {
		g.stopSweep()
	}
	if g.batches != nil {
		g.batches.Close()
	}
	seen := map[*http.Client]bool{}
	for _, b := range g.byID {
		if !seen[b.Client()] {
			seen[b.Client()] = true
			b.Client().CloseIdleConnections()
		}
		b.Close()
	}
}

// serveNotFound names the method and path in the caller's error family.
func (g *Gateway) serveNotFound(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if len(p) > 200 {
		p = p[:200] + "…"
	}
	(&providers.APIError{Status: http.StatusNotFound, Code: "unknown_url",
		Message: fmt.Sprintf("no endpoint for %s %s on this gateway; see GET /v1/models for the models and docs/team-gateway.md (\"Endpoints\") for its endpoints", r.Method, p)}).Write(w, g.familyOf(nil, r))
}

// only answers a method other than method (GET takes HEAD too) with a
// 405 in family's error family (nil: the one its table entry names, or the caller's; familyOf).
func (g *Gateway) only(method string, family apierror.Audience, h http.HandlerFunc) http.HandlerFunc {
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	return func(w http.ResponseWriter, r *http.Request) {
		// HEAD is GET without the body (net/http drops it), as RFC 9110
		// asks of every GET resource.
		if r.Method != method && !(method == http.MethodGet && r.Method == http.MethodHead) {
			w.Header().Set("Allow", allow)
			(&providers.APIError{Status: http.StatusMethodNotAllowed,
				Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use " + method}).Write(w, g.familyOf(family, r))
			return
		}
		h(w, r)
	}
}

// familyOf is family, or when it is nil the one r's entry in the route
// table names, or the caller's (callerFormat) where it names none.
func (g *Gateway) familyOf(family apierror.Audience, r *http.Request) apierror.Audience {
	return tableFamily(g.routes, family, r)
}

// tableFamily is familyOf for table t.
func tableFamily(t *routeTable, family apierror.Audience, r *http.Request) apierror.Audience {
	if family != nil {
		return family
	}
	if e, _ := t.lookup(r); e.family != nil {
		return e.family
	}
	return callerFormat(r)
}

// ServeHTTP serves the gateway's paths and 404s the rest; the Caddy module
// uses Route instead so unknown paths reach the next handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h, ok := g.Route(r); ok {
		h(w, r)
		return
	}
	(&providers.APIError{Status: http.StatusNotFound, Message: "no route for " + r.Method + " " + r.URL.Path}).Write(w, g.familyOf(nil, r))
}

// allowedAliases lists the aliases the caller may use, in config order.
func (g *Gateway) allowedAliases(id *policy.Identity) []string {
	var out []string
	for _, a := range g.models.Aliases() {
		if id == nil || id.Allows(a) {
			out = append(out, a)
		}
	}
	return out
}

// anthropicModels reports whether a models request wants Anthropic's
// shape: its SDK and Claude Code send anthropic-version, x-api-key or both.
func anthropicModels(r *http.Request) bool {
	return r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != ""
}

// modelsFormat is the format a models request is answered in: Anthropic's
// when it looks like its SDK's, else the caller's.
func modelsFormat(r *http.Request) providers.Format {
	if anthropicModels(r) {
		return providers.FormatAnthropic
	}
	return callerFormat(r)
}

func (g *Gateway) serveModels(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, modelsFormat(r).ModelList(g.allowedAliases(policy.IdentityFrom(r.Context()))))
}

// serveModel answers GET /v1/models/{alias} (the SDKs' models.retrieve):
// one alias the key may use, or a 404 that does not tell an alias the key
// may not use from one that does not exist.
func (g *Gateway) serveModel(w http.ResponseWriter, r *http.Request) {
	alias := strings.TrimPrefix(strings.TrimPrefix(r.URL.Path, "/v1"), "/models/")
	cf := modelsFormat(r)
	if _, ok := g.backends[alias]; !ok || !policy.IdentityFrom(r.Context()).Allows(alias) {
		(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q does not exist or this key may not use it; GET /v1/models lists the models it may use", alias)}).Write(w, cf)
		return
	}
	writeJSON(w, http.StatusOK, cf.Model(alias))
}

func (g *Gateway) serveLiveness(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []byte(`{"status":"ok"}`))
}

func (g *Gateway) serveReadiness(w http.ResponseWriter, r *http.Request) {
	if g.opts.Ready != nil {
		if err := g.opts.Ready(); err != nil {
			b, _ := json.Marshal(map[string]string{"status": "unavailable", "ledger": err.Error()})
			writeJSON(w, http.StatusServiceUnavailable, b)
			return
		}
	}
	ready := map[string]any{"status": "ok", "deployments": len(g.byID)}
	if g.opts.MCPNotConnected != nil {
		ready["mcp_not_connected"] = g.opts.MCPNotConnected()
	}
	b, _ := json.Marshal(ready)
	writeJSON(w, http.StatusOK, b)
}

func (g *Gateway) serveHealth(w http.ResponseWriter, r *http.Request) {
	id := policy.IdentityFrom(r.Context())
	if id == nil || id.Role != policy.RoleAdmin {
		status := http.StatusForbidden
		if id == nil {
			status = http.StatusUnauthorized
		}
		(&providers.APIError{Status: status, Message: "/health needs the admin key"}).Write(w, g.familyOf(nil, r))
		return
	}
	type dep struct {
		Alias    string `json:"model_name"`
		ID       string `json:"id"`
		Provider string `json:"provider"`
		Model    string `json:"model"`
		upstream.Snapshot
	}
	now := g.now()
	out := struct {
		Deployments []dep `json:"deployments"`
	}{Deployments: []dep{}}
	for _, d := range g.models.Deployments {
		b := g.byID[d.ID]
		out.Deployments = append(out.Deployments, dep{Alias: d.Alias, ID: d.ID, Provider: d.Provider, Model: d.Model, Snapshot: b.State().Snapshot(now)})
	}
	body, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, body)
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// newRecord starts the ledger record of a call with what every record
// shares.
func newRecord(c *Call, id *policy.Identity, start time.Time) *ledger.Record {
	rec := &ledger.Record{Time: start.UTC(), ServiceTier: "standard"}
	if id != nil {
		rec.KeyID, rec.Workspace = id.KeyID, id.Workspace
		rec.Person, rec.Groups = id.PersonID(), id.Groups
	}
	rec.Endpoint = c.recordEndpoint()
	return rec
}

// Unauthenticated answers a request that reached the gateway with no
// identity: llm_auth is missing from the route.
func (g *Gateway) Unauthenticated(w http.ResponseWriter, r *http.Request) {
	(&providers.APIError{Status: http.StatusUnauthorized,
		Message: "this gateway has no llm_auth before llm_gateway; add llm_auth (or insecure_no_auth for a trusted network)"}).Write(w, g.familyOf(nil, r))
}
