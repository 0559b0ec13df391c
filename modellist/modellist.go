package modellist

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// Kind is the wire protocol a deployment speaks.
type Kind string

const (
	KindOpenAI    Kind = "openai"    // any chat-completions-compatible server, cloud or local
	KindAnthropic Kind = "anthropic" // Anthropic Messages API
	KindOllama    Kind = "ollama"    // native /api/chat (ollama/ and ollama_chat/)
	KindEcho      Kind = "echo"      // built-in, answers with the last user message
	KindGemini    Kind = "gemini"    // Google's native Gemini API (generateContent)
	// KindBedrock is Claude on AWS Bedrock: the Messages body with
	// anthropic_version in it, SigV4-signed InvokeModel calls, and
	// streams framed as AWS event streams.
	KindBedrock Kind = "bedrock"
	// KindVertex is Claude on Google Vertex AI: the Messages body with
	// anthropic_version in it, the model in the URL (rawPredict), an OAuth
	// token from a service account, and plain Anthropic SSE streams.
	KindVertex Kind = "vertex_ai"
)

// Deployment is one model_list entry: one upstream serving an alias. Several
// deployments may share an alias; the gateway balances and fails over among
// them.
type Deployment struct {
	Index    int    // position in model_list (0-based), for messages
	Alias    string // model_name
	Provider string // the prefix as written: "openai", "groq", "ollama_chat", "hosted_vllm", "echo", ...
	Kind     Kind
	Model    string // upstream model name with the prefix stripped (may contain '/')
	APIBase  string // resolved (provider default for clouds), no trailing slash; "" for echo
	// APIKey is the resolved secret; "" where not needed. It is excluded from
	// JSON and from String/GoString so that dumping a Deployment is safe.
	APIKey        string        `json:"-"`
	Local         bool          // local server (ollama*, openai-compatible with api_base, hosted_vllm, lm_studio, llamacpp, echo)
	Timeout       time.Duration // 0 = unset
	StreamTimeout time.Duration // 0 = unset
	MaxRetries    *int          // nil = unset (the router's num_retries applies)
	// FirstTokenTimeout bounds a stream's wait for its first event; past
	// it the next deployment is tried (0 = unset: router_settings').
	FirstTokenTimeout time.Duration
	// PassthroughAuth: calls carry the caller's own provider credential
	// (a subscription seat) instead of the entry's; PassthroughBudget
	// makes their notional cost count against budgets.
	PassthroughAuth, PassthroughBudget bool
	// AssistantPrefill is how a chat-completions backend is asked to
	// continue a trailing assistant message ("" when it cannot), so a
	// stream cut elsewhere can be continued on it.
	AssistantPrefill string
	RPM, TPM         int64   // 0 = unlimited
	Weight           float64 // default 1; always > 0
	// Batch is whether batches go to the provider's own batch API:
	// BatchAuto, BatchGateway or BatchProvider (batch.go).
	Batch string
	// ExtraHeaders are sent upstream with every request. Values may have come
	// from os.environ/NAME and are treated as secrets: excluded from JSON and
	// String output. Names are canonicalized (X-Team), which is how net/http
	// sends them anyway.
	ExtraHeaders map[string]string `json:"-"`
	// TLS, when set, is how to reach an https upstream behind a private CA
	// or one that wants a client certificate.
	TLS *UpstreamTLS
	// ResponsesNative: Responses API requests go to the server's own
	// /responses as they are (OpenAI's API, or responses_api: native);
	// otherwise they are translated to chat completions.
	ResponsesNative bool
	// AWS is a bedrock/ deployment's region and credentials; nil for
	// every other kind.
	AWS *AWSAccount
	// Vertex is a vertex_ai/ deployment's project, location and service
	// account; nil for every other kind.
	Vertex *VertexAccount
	Info   ModelInfo
	// ReasonsUnseen: the model reasons unseen before it writes, by
	// default (ReasonsUnseen of its model and Info.SupportsReasoning):
	// a client that cuts its stream before the first output pays the
	// wait.
	ReasonsUnseen bool
	// Secrets is the entry's secrets: action, or SecretsDefault
	// (SecretsPolicy resolves it).
	Secrets SecretsAction
	// ID is a stable, secret-free identity: a short hex hash of alias,
	// provider, model, api_base and the ordinal of this deployment among
	// identical ones. The same config gives the same IDs across reloads, so
	// per-deployment state (cooldowns, latency) can be carried over.
	ID string
}

// String describes the deployment without its key or header values. It has
// a value receiver so that printing a Deployment value is as safe as
// printing a pointer.
func (d Deployment) String() string {
	where := d.APIBase
	if where == "" {
		where = "built-in"
	}
	return fmt.Sprintf("%s → %s/%s @ %s (model_list[%d], id %s)", d.Alias, d.Provider, d.Model, where, d.Index, d.ID)
}

// GoString keeps %#v from printing the key field by field.
func (d Deployment) GoString() string { return "modellist.Deployment{" + d.String() + "}" }

// AWSAccount is how a bedrock/ deployment reaches Bedrock. With no key
// pair the standard AWS chain supplies credentials at request time
// (AWS_ACCESS_KEY_ID…, AWS_PROFILE and the shared files, SSO, web
// identity, the instance role), which is also what refreshes them.
type AWSAccount struct {
	Region string
	// The key pair and session token are secrets: excluded from JSON and
	// from every message.
	AccessKeyID     string `json:"-"`
	SecretAccessKey string `json:"-"`
	SessionToken    string `json:"-"`
}

// Static reports whether the entry carries its own key pair.
func (a *AWSAccount) Static() bool { return a.AccessKeyID != "" }

// VertexAccount is how a vertex_ai/ deployment reaches Vertex AI.
type VertexAccount struct {
	Project  string
	Location string
	// CredentialsFile is the service-account JSON's path as resolved;
	// Credentials is its content, read and checked at load so that a
	// missing or wrong file stops the load instead of the first request.
	CredentialsFile string
	Credentials     []byte `json:"-"`
	// ClientEmail and TokenURI are the service account's identity and
	// where its tokens come from, for messages and tests.
	ClientEmail string
	TokenURI    string
	// ADC: no key file was given; tokens come from Application Default
	// Credentials, looked up when the first request needs one.
	ADC bool
}

// ModelInfo carries per-deployment prices and limits.
type ModelInfo struct {
	// Prices in picodollars (1e-12 USD) per token, parsed exactly from the
	// YAML's decimal text (0.000003, 3e-06 and 3.0e-6 all give 3_000_000)
	// without float arithmetic, so sums in the ledger are exact. nil = not set.
	InputCostPerToken           *int64
	OutputCostPerToken          *int64
	CacheReadInputTokenCost     *int64
	CacheCreationInputTokenCost *int64
	// CacheCreation1hInputTokenCost is the price of a 1-hour cache write
	// (LiteLLM's cache_creation_input_token_cost_above_1hr).
	CacheCreation1hInputTokenCost *int64
	MaxInputTokens                int64 // 0 = unset
	// MaxOutputTokens is the output bound a budgeted request that sets
	// none is sent with (default_max_tokens otherwise); 0 = unset.
	MaxOutputTokens int64
	// SupportsReasoning says whether the model thinks unseen before it
	// writes (LiteLLM's supports_reasoning); nil: judged by its name.
	// A client that cuts a stream of one pays for the wait.
	SupportsReasoning *bool
}

// Routing strategies accepted in router_settings.routing_strategy.
const (
	StrategySimpleShuffle = "simple-shuffle"
	StrategyLeastBusy     = "least-busy"
	StrategyLatency       = "latency-based-routing"
)

// Router defaults, applied when the field is absent from router_settings.
const (
	// DefaultNumRetries is 0 because failover to the alias's other
	// deployments and to fallbacks already covers an upstream that is down;
	// repeating the same request on top of that multiplies latency and cost
	// for interactive agents and turns an outage into a retry storm. Users
	// who want retries opt in.
	DefaultNumRetries   = 0
	DefaultCooldownTime = 60 * time.Second
	DefaultAllowedFails = 3
)

// RouterSettings is the top-level router_settings block with defaults filled.
type RouterSettings struct {
	RoutingStrategy string        // StrategySimpleShuffle (default), StrategyLeastBusy or StrategyLatency
	NumRetries      int           // default DefaultNumRetries
	Timeout         time.Duration // 0 = unset
	StreamTimeout   time.Duration // 0 = unset
	// FirstTokenTimeout bounds a stream's wait for its first event, for
	// entries that set none (0 = unset).
	FirstTokenTimeout time.Duration
	Fallbacks         []Fallback    // in file order
	CooldownTime      time.Duration // default 60s; an explicit 0 disables cooldown
	AllowedFails      int           // default 3
	// SessionAffinity keeps the requests of one agent session on the
	// deployment that served it while that deployment is healthy, so the
	// upstream's prompt cache is read rather than written again. Default true.
	SessionAffinity bool
}

// Fallback says: when every deployment of Alias fails, try the aliases in To,
// in order.
type Fallback struct {
	Alias string
	To    []string
}

// ModelAlias maps a client model name to an alias. Pattern is either an exact
// name or a prefix ending in '*' (e.g. "claude-sonnet-*").
type ModelAlias struct{ Pattern, Alias string }

// Config is a loaded, validated model_list. It is immutable after Parse and
// safe for concurrent use; slices returned by its methods are shared and must
// not be modified.
type Config struct {
	Deployments  []*Deployment
	Router       RouterSettings
	ModelAliases []ModelAlias // in file order
	// MCPServers are the mcp_servers entries, in file order.
	MCPServers []*MCPServer

	byAlias   map[string][]*Deployment
	aliases   []string
	fallbacks map[string][]string
	exact     map[string]string // model_aliases keys without '*'
	patterns  []ModelAlias      // '*' keys with the star removed, longest first
}

// Aliases returns every model_name once, in first-appearance order.
func (c *Config) Aliases() []string {
	return c.aliases[:len(c.aliases):len(c.aliases)]
}

// Resolve maps a client's model string to an alias: an exact alias first,
// then an exact model_aliases key, then the longest matching prefix pattern.
func (c *Config) Resolve(model string) (alias string, ok bool) {
	if _, ok := c.byAlias[model]; ok {
		return model, true
	}
	if a, ok := c.exact[model]; ok {
		return a, true
	}
	for _, p := range c.patterns {
		if strings.HasPrefix(model, p.Pattern) {
			return p.Alias, true
		}
	}
	return "", false
}

// FallbacksFor returns the aliases to try, in order, after alias fails, or
// nil if it has none.
func (c *Config) FallbacksFor(alias string) []string {
	to := c.fallbacks[alias]
	return to[:len(to):len(to)]
}

// Load reads the models file at path and parses it with the process
// environment. Errors and warnings name the path.
func Load(path string) (*Config, []string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		// os errors already carry the path.
		return nil, nil, fmt.Errorf("reading models file: %w", err)
	}
	return Parse(data, path, os.LookupEnv)
}
