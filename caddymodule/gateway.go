package caddymodule

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
	"github.com/dustin/go-humanize"
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/agentotel"
	"github.com/modelgate/modelgate/handlers"
	"github.com/modelgate/modelgate/handlers/responses"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp"
	"github.com/modelgate/modelgate/mcp/upstreamauth"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/telemetry"
)

func init() {
	caddy.RegisterModule(Gateway{})
	httpcaddyfile.RegisterHandlerDirective("llm_gateway", parseGateway)
	httpcaddyfile.RegisterDirectiveOrder("llm_gateway", httpcaddyfile.Before, "abort")
}

// Gateway routes OpenAI chat-completions and Anthropic Messages requests
// by model alias to the deployments of a YAML model_list, translating wire
// formats where the backend speaks another one. Its other endpoints are
// the models list, token counting and health; every other path goes to
// the next handler.
type Gateway struct {
	// Models is the path of the YAML model_list. Placeholders are expanded.
	Models string `json:"models,omitempty"`
	// MaxRequestBody limits client bodies in bytes (larger → 413).
	// Default 32 MB, as the providers' APIs.
	MaxRequestBody int64 `json:"max_request_body,omitempty"`
	// MaxBodyMemory bounds the request-body bytes the gateway holds at
	// once over all its requests (buffers outgrown while reading a body
	// included); a request that finds no room within about a second gets
	// 503 with Retry-After. Default 8 × max_request_body (256 MB at the
	// default limit); at least 2 × max_request_body + 2 MiB.
	MaxBodyMemory int64 `json:"max_body_memory,omitempty"`
	// DefaultMaxTokens is sent to Anthropic backends when an OpenAI
	// client gives no limit, and to any backend for a request under a
	// budget that gives none and whose model sets no max_output_tokens.
	// Default 4096.
	DefaultMaxTokens int64 `json:"default_max_tokens,omitempty"`
	// Timeout bounds a whole upstream request when neither the model
	// entry nor router_settings sets one. Default 10m.
	Timeout caddy.Duration `json:"timeout,omitempty"`
	// MaxConcurrentPerKey is deprecated: it is the max_parallel of every
	// key that sets none of its own (handlers.GatewayOptions), and
	// Provision warns of it. 0: none.
	MaxConcurrentPerKey int `json:"max_concurrent_per_key,omitempty"`
	// WebSocketLifetime bounds how long a Responses WebSocket stays open;
	// at its end the connection is closed (1000, with the reason) once
	// its turn in progress finishes, and the client opens a new one.
	// Default 1h.
	WebSocketLifetime caddy.Duration `json:"websocket_lifetime,omitempty"`
	// InsecureNoAuth serves requests that no llm_auth authenticated, as
	// an anonymous user. Without it such requests get 401, so forgetting
	// llm_auth never opens the gateway.
	InsecureNoAuth bool `json:"insecure_no_auth,omitempty"`
	// AnswerAllPaths answers 404 for every path the gateway does not
	// serve, where by default only paths under the API's prefixes (/v1/,
	// /chat/, ...) get one and others go to the next handler. For a route
	// that ends with the gateway (`caddy gateway` sets it).
	AnswerAllPaths bool `json:"answer_all_paths,omitempty"`
	// Secrets sets the secret firewall's action (secrets.go).
	Secrets *Secrets `json:"secrets,omitempty"`

	h       *handlers.Gateway
	mcp     *mcp.Gateway // nil without mcp_servers
	app     *App
	logger  *zap.Logger
	metrics *metrics
	// otlp exports the OTLP metrics; nil unless the OTEL_* variables ask.
	otlp *telemetry.Metrics
	// approvalLinks serves the links of MCP approval requests; nil
	// without mcp_servers.
	approvalLinks http.Handler
	// mcpConnect serves people's connections to auth: oauth MCP servers;
	// nil without such servers.
	mcpConnect http.Handler
	// holdsStates records that Provision took a reference on the pooled
	// deployment states, so Cleanup releases exactly that one.
	holdsStates bool
	// holdsFirewall: Provision took a reference on the pooled secret
	// firewall.
	holdsFirewall bool
}

// CaddyModule returns the Caddy module information.
func (Gateway) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "http.handlers.llm_gateway", New: func() caddy.Module { return new(Gateway) }}
}

// Provision loads and validates the model list and builds the handler.
func (g *Gateway) Provision(ctx caddy.Context) error {
	g.logger = ctx.Logger()
	g.warnDeprecated(g.logger)
	if g.Models == "" {
		return fmt.Errorf("models: the path of a models YAML file is required, e.g. llm_gateway { models /etc/modelgate/models.yaml }")
	}
	path, err := caddy.NewReplacer().ReplaceOrErr(g.Models, true, true)
	if err != nil {
		return fmt.Errorf("models: %v", err)
	}
	cfg, warnings, err := modellist.Load(path)
	if err != nil {
		return err
	}
	for _, w := range warnings {
		g.logger.Warn("models file", zap.String("warning", w))
	}
	appIface, err := ctx.App("modelgate")
	if err != nil {
		return fmt.Errorf("loading modelgate app: %v", err)
	}
	g.app = appIface.(*App)
	g.app.hold()
	g.metrics, err = newMetrics(ctx.GetMetricsRegistry(), g.app)
	if err != nil {
		return err
	}
	st, _, err := states.LoadOrNew("deployments", func() (caddy.Destructor, error) {
		return deploymentStates{handlers.NewStates(), responses.NewRuns()}, nil
	})
	if err != nil {
		return err
	}
	g.holdsStates = true
	if g.otlp, err = telemetry.NewMetrics(ctx, os.Getenv); err != nil {
		return err
	}
	seen, fw, err := g.provisionSecrets(ctx, cfg)
	if err != nil {
		return err
	}
	if len(cfg.MCPServers) > 0 {
		creds, err := mcpCredentials(g.app, cfg.MCPServers, siteOf(ctx))
		if err != nil {
			return err
		}
		if creds != nil {
			g.mcpConnect = creds
		}
		g.mcp = mcp.New(mcp.Options{
			Credentials:    creds,
			Servers:        cfg.MCPServers,
			WorkspaceMCP:   func(ws string) []string { return g.app.Controls().WorkspaceLimits(ws).MCP },
			MaxRequestBody: g.MaxRequestBody,
			Observer:       &mcpObserver{app: g.app, logger: g.logger, metrics: g.metrics},
			Admit:          mcpAdmit(g.app),
			Reserve:        mcpReserve(g.app),
			Approvals:      mcpApprovals(g.app),
			Secrets:        &mcp.ArgScreen{Firewall: fw, Action: g.Secrets.mcpAction, Report: seen.event},
			ToolSearch: func(id *policy.Identity) bool {
				return id.Limits.MCPToolSearch || g.app.Controls().WorkspaceLimits(id.Workspace).MCPToolSearch
			},
		})
		g.approvalLinks = approvalLinks(g.app)
		g.app.onStart = append(g.app.onStart, g.mcp.Start)
	}
	var mcpHandler http.Handler
	if g.mcp != nil {
		mcpHandler = g.mcp
	}
	g.h = handlers.NewGateway(handlers.GatewayOptions{
		Models:              cfg,
		Telemetry:           &telemetry.Tracer{CaptureContent: captureContent(os.Getenv), Metrics: g.otlp},
		MaxRequestBody:      g.MaxRequestBody,
		BodyMemory:          g.MaxBodyMemory,
		DefaultMaxTokens:    g.DefaultMaxTokens,
		Timeout:             time.Duration(g.Timeout),
		MaxConcurrentPerKey: g.MaxConcurrentPerKey,
		WebSocketLifetime:   time.Duration(g.WebSocketLifetime),
		States:              st.(deploymentStates).States,
		BackgroundRuns:      st.(deploymentStates).runs,
		Recorder:            g.app,
		Observer:            &observer{logger: g.logger, metrics: g.metrics},
		Ready:               g.app.Ready,
		MCPNotConnected:     mcpNotConnected(g, cfg),
		MCP:                 mcpHandler,
		ApprovalLinks:       g.approvalLinks,
		MCPConnect:          g.mcpConnect,
		PublicURL:           g.app.publicURL,
		LedgerDown:          g.app.LedgerDown,
		AnswerAllPaths:      g.AnswerAllPaths,
		Durable:             g.app.Durable(),
		Responses:           g.app.ResponseStore,
		Budgets:             g.app.Budgets(),
		Controls:            g.app.Controls(),
		Site:                siteOf(ctx),
		Rates:               g.app.Rates(),
		CacheWatch:          g.app.CacheWatch(),
		Batches:             g.app.batchOptions(g.logger),
		Breaker:             g.app.Breaker(),
		// The gateway's prices bound the agent-reported costs a workspace
		// counts; g.h is set before the first export can arrive.
		AgentTelemetry: agentTelemetry(g.app, func(model string) ledger.Prices { return g.h.ListPrices(model) }),
		WorkContexts:   workContexts(g.app),
		Secrets:        fw,
		SecretsFor:     g.Secrets.actionFor,
		SecretEvents:   seen.event,
	})
	if g.app.downgrades == nil {
		return nil
	}
	return g.app.downgrades.addGateway(g.h.DowngradeTarget)
}

// warnDeprecated logs the options the config still uses under a
// deprecated name, with what to set instead.
func (g *Gateway) warnDeprecated(log *zap.Logger) {
	if g.MaxConcurrentPerKey > 0 {
		log.Warn("max_concurrent_per_key is deprecated: it is now the max_parallel of every key that sets none of its own; set max_parallel on the keys, workspaces or groups instead",
			zap.Int("max_concurrent_per_key", g.MaxConcurrentPerKey))
	}
}

// deploymentStates lets the state table and the background responses
// running here live in a UsagePool, so a reload keeps (and can still
// cancel) them.
type deploymentStates struct {
	*handlers.States
	runs *responses.Runs
}

func (deploymentStates) Destruct() error { return nil }

// Validate checks the numeric options.
func (g *Gateway) Validate() error {
	if g.MaxRequestBody < 0 {
		return fmt.Errorf("max_request_body: must not be negative")
	}
	if g.MaxBodyMemory < 0 {
		return fmt.Errorf("max_body_memory: must not be negative")
	}
	if g.MaxBodyMemory > 0 {
		limit := g.MaxRequestBody
		if limit == 0 {
			limit = 32 << 20
		}
		if least := handlers.MinBodyMemory(limit); g.MaxBodyMemory < least {
			return fmt.Errorf("max_body_memory: %d bytes cannot hold one body at max_request_body %d while it is read; give at least %d (2 × max_request_body + 2 MiB)", g.MaxBodyMemory, limit, least)
		}
	}
	if g.MaxConcurrentPerKey < 0 {
		return fmt.Errorf("max_concurrent_per_key: must not be negative")
	}
	if g.DefaultMaxTokens < 0 {
		return fmt.Errorf("default_max_tokens: must not be negative")
	}
	return nil
}

// Cleanup closes idle upstream connections. It tolerates a partial
// Provision.
func (g *Gateway) Cleanup() error {
	if g.h != nil {
		g.h.Close()
	}
	if g.mcp != nil {
		g.mcp.Close()
	}
	if b, ok := g.mcpConnect.(*upstreamauth.Broker); ok {
		b.Close()
	}
	if g.app != nil {
		if err := g.app.release(); err != nil {
			g.logger.Error("closing the ledger", zap.Error(err))
		}
	}
	if g.holdsStates {
		_, _ = states.Delete("deployments")
	}
	if g.holdsFirewall {
		_, _ = states.Delete("secret-firewall")
	}
	if g.otlp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := g.otlp.Shutdown(ctx); err != nil {
			g.logger.Warn("flushing OpenTelemetry metrics", zap.Error(err))
		}
	}
	return nil
}

// captureContent reads OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT,
// the variable OpenTelemetry's GenAI instrumentations use for the same
// choice: prompts go on spans only when it is "true".
func captureContent(getenv func(string) string) bool {
	return strings.EqualFold(getenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"), "true")
}

// ServeHTTP answers the gateway's endpoints and passes every other path on.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request, next caddyhttp.Handler) error {
	hh, ok := g.h.Route(r)
	if !ok {
		return next.ServeHTTP(w, r)
	}
	if policy.IdentityFrom(r.Context()) == nil && !g.h.Public(r) {
		if !g.InsecureNoAuth {
			g.h.Unauthenticated(w, r)
			return nil
		}
		r = r.WithContext(policy.WithIdentity(r.Context(), &policy.Identity{KeyID: "anonymous", Role: policy.RoleUser}))
	}
	hh(w, r)
	return nil
}

func parseGateway(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	g := new(Gateway)
	return g, g.UnmarshalCaddyfile(h.Dispenser)
}

// positiveDuration reads the option d is at: one positive duration.
func positiveDuration(d *caddyfile.Dispenser) (caddy.Duration, error) {
	opt := d.Val()
	if !d.NextArg() {
		return 0, d.ArgErr()
	}
	dur, err := caddy.ParseDuration(d.Val())
	if err != nil || dur <= 0 {
		return 0, d.Errf("%s: want a positive duration such as 1h, got %q", opt, d.Val())
	}
	if d.NextArg() {
		return 0, d.ArgErr()
	}
	return caddy.Duration(dur), nil
}

// UnmarshalCaddyfile parses:
//
//	llm_gateway {
//		models <models.yaml>
//		max_request_body <size>
//		max_body_memory <size>
//		default_max_tokens <n>
//		timeout <duration>
//		max_concurrent_per_key <n>
//		websocket_lifetime <duration>
//		insecure_no_auth
//		secrets {
//			action redact|block|log|off
//			alias <model_name> redact|block|log|off
//		}
//	}
func (g *Gateway) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	// No inline path: Caddy reads a first argument starting with "/" as a
	// path matcher, so `llm_gateway /etc/models.yaml` would silently mean
	// something else.
	d.Next()
	if d.NextArg() {
		return d.Errf("llm_gateway takes no arguments; write llm_gateway { models %s }", d.Val())
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "models":
			if g.Models != "" {
				return d.Err("models already specified")
			}
			if !d.AllArgs(&g.Models) {
				return d.ArgErr()
			}
		case "max_request_body":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := humanize.ParseBytes(s)
			if err != nil || n == 0 {
				return d.Errf("max_request_body: want a size such as 32MB, got %q", s)
			}
			g.MaxRequestBody = int64(n)
		case "max_body_memory":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := humanize.ParseBytes(s)
			if err != nil || n == 0 || n > 1<<62 {
				return d.Errf("max_body_memory: want a size such as 256MB, got %q", s)
			}
			g.MaxBodyMemory = int64(n)
		case "default_max_tokens":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := strconv.ParseInt(s, 10, 64)
			if err != nil || n <= 0 {
				return d.Errf("default_max_tokens: want a positive whole number, got %q", s)
			}
			g.DefaultMaxTokens = n
		case "timeout":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil {
				return d.Errf("timeout: %v", err)
			}
			g.Timeout = caddy.Duration(dur)
		case "max_concurrent_per_key":
			var s string
			if !d.AllArgs(&s) {
				return d.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return d.Errf("max_concurrent_per_key: want a positive whole number, got %q", s)
			}
			g.MaxConcurrentPerKey = n
		case "websocket_lifetime":
			dur, err := positiveDuration(d)
			if err != nil {
				return err
			}
			g.WebSocketLifetime = dur
		case "insecure_no_auth":
			if d.NextArg() {
				return d.ArgErr()
			}
			g.InsecureNoAuth = true
		case "answer_all_paths":
			if d.NextArg() {
				return d.ArgErr()
			}
			g.AnswerAllPaths = true
		case "secrets":
			s, err := parseSecrets(d)
			if err != nil {
				return err
			}
			g.Secrets = s
		default:
			return d.Errf("unrecognized llm_gateway option %q (known: models, max_request_body, max_body_memory, default_max_tokens, timeout, max_concurrent_per_key, websocket_lifetime, insecure_no_auth, answer_all_paths, secrets)", d.Val())
		}
	}
	return nil
}

// Interface guards.
var (
	_ caddy.Provisioner           = (*Gateway)(nil)
	_ caddy.Validator             = (*Gateway)(nil)
	_ caddy.CleanerUpper          = (*Gateway)(nil)
	_ caddyhttp.MiddlewareHandler = (*Gateway)(nil)
	_ caddyfile.Unmarshaler       = (*Gateway)(nil)
)

// agentTelemetry receives coding agents' OpenTelemetry export into the
// ledger under the caller's key (see package agentotel).
func agentTelemetry(app *App, listPrices func(model string) ledger.Prices) *agentotel.Receiver {
	return agentotel.NewReceiver(agentotel.Options{
		Counted:    func(ws string) bool { return app.Controls().WorkspaceLimits(ws).CountAgentReported },
		ListPrices: listPrices,
		Caller: func(r *http.Request) (string, string, bool) {
			id := policy.IdentityFrom(r.Context())
			if id == nil {
				return "", "", false
			}
			return id.KeyID, id.Workspace, true
		},
		Person: func(ctx context.Context) (string, string) {
			if id := policy.IdentityFrom(ctx); id != nil {
				return id.PersonID(), id.Groups
			}
			return "", ""
		},
		Record:  app.Enqueue,
		Metrics: agentMetrics(app),
		Served: func(ctx context.Context, sessionID string) (bool, error) {
			ss, ok := app.Store().(ledger.SessionServer)
			if !ok {
				return false, nil
			}
			return ss.SessionServed(ctx, sessionID, time.Now().Add(-48*time.Hour))
		},
	})
}
