package upstream

// Endpoints: what each kind of upstream adds to its wire format (where
// requests go, how they are authenticated, how tokens are counted for
// free, how streams are framed), settled once per deployment when the
// models file loads, so that no request switches on a kind.

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/providers"
)

// endpoint is one deployment's upstream as its kind addresses it: what
// every kind must do. The routes (providers.Route) translate bodies; the
// endpoint does the rest. What only some kinds do is an optional
// interface below, which New asks of the endpoint once and keeps on the
// Deployment, as Caddy's reverse proxy asks its transport.
type endpoint interface {
	// format is the wire format the upstream speaks.
	format() providers.Format
	// prepare names the URL a request of client format cf goes to and
	// the body to post there: a cloud rewrites the Messages body into its
	// dialect. client is what the caller sent besides its body (its
	// query and betas).
	prepare(cf providers.Format, body []byte, client ClientMeta, stream bool) (url string, out []byte, err error)
	// authorize adds to req, whose payload is body, what the request
	// needs past the fixed header: the client's Anthropic version and
	// betas, a signature, a token. Its error is for the client: it names
	// what is missing, never a secret.
	authorize(ctx context.Context, req *http.Request, cf providers.Format, client ClientMeta, body []byte) error
	// counter is how the upstream counts a Messages request's tokens
	// without inference.
	counter() tokenCounter
	// events reads a stream's events in the upstream's framing (a
	// route's NDJSON aside, which the route knows).
	events(body io.Reader, br *bufio.Reader) providers.EventReader
	// parseError reads an error answer into an APIError, in the
	// upstream's dialect; the caller removes secrets.
	parseError(status int, h http.Header, body []byte) *providers.APIError
}

// fixedCredentials is an endpoint whose credentials are the same on every
// request: a key in a header. A cloud signs each request in authorize
// instead.
type fixedCredentials interface {
	// credentials sets the fixed credentials in h, the header every
	// request carries.
	credentials(h http.Header)
}

// extraEndpoints is an endpoint that may serve more than chat: an
// embeddings endpoint, or Responses requests untranslated at the
// server's own /responses. An endpoint without it has neither.
type extraEndpoints interface {
	// embeddings reports whether the upstream has an embeddings endpoint.
	embeddings() bool
	// nativeResponses reports that Responses requests go untranslated to
	// the server's own /responses.
	nativeResponses() bool
}

// credentialRenewer is an endpoint whose credentials can go stale (a
// cloud's token, rotated keys) and be fetched again.
type credentialRenewer interface {
	// credentialsRefused reports whether an error answer means the
	// deployment's credentials are wrong or stale rather than the request.
	credentialsRefused(status int, message string) bool
	// rejected is told that the upstream refused the credentials, so that
	// the next request gets fresh ones instead of the cached ones. It
	// reports whether fresh ones may differ.
	rejected() bool
}

// secretHolder is an endpoint holding secrets beyond the entry's own
// (secretsOf) that upstream text must never carry back: a cloud's key
// pair, private key, token of the moment.
type secretHolder interface {
	secrets() []string
}

// An endpoint holding resources of its own beyond the shared client (a
// token endpoint's connections) is an io.Closer.

const (
	echoURL      = "http://echo.modelgate.invalid/v1/chat/completions"
	echoEmbedURL = "http://echo.modelgate.invalid/v1/embeddings"
)

// newEndpoint builds the endpoint for d's kind: the one place that
// switches on it.
func newEndpoint(d *modellist.Deployment) endpoint {
	e := &httpEndpoint{up: providers.FormatOpenAI, count: estimateCount{}}
	switch d.Kind {
	case modellist.KindBedrock:
		return newBedrockEndpoint(d)
	case modellist.KindVertex:
		return newVertexEndpoint(d)
	case modellist.KindAnthropic:
		e.up, e.url, e.count = providers.FormatAnthropic, d.APIBase+"/v1/messages", anthropicCount{}
		e.passAnthropic = true
		if u, err := url.Parse(d.APIBase); err == nil {
			e.anthropicOwn = strings.EqualFold(u.Hostname(), "api.anthropic.com")
		}
		_, e.pinVersion = d.ExtraHeaders["Anthropic-Version"]
		_, e.pinBeta = d.ExtraHeaders["Anthropic-Beta"]
	case modellist.KindOllama:
		e.up, e.url, e.embedURL = providers.FormatOllama, d.APIBase+"/api/chat", d.APIBase+"/api/embed"
	case modellist.KindEcho:
		e.url, e.embedURL = echoURL, echoEmbedURL
	case modellist.KindGemini:
		model := d.APIBase + "/v1beta/models/" + url.PathEscape(d.Model)
		e.up, e.url = providers.FormatGemini, model+":generateContent"
		e.streamURL, e.embedURL = model+":streamGenerateContent?alt=sse", model+":batchEmbedContents"
		e.count = geminiCount{url: model + ":countTokens"}
	default:
		e.url, e.embedURL = d.APIBase+"/chat/completions", d.APIBase+"/embeddings"
		// Which tokenizer a server has is known by its provider name
		// only: both are OpenAI-compatible.
		switch {
		case !d.Local:
			e.count = tiktokenCount{}
		case d.Provider == "hosted_vllm":
			e.count = serverCount{vllm: true}
		case d.Provider == "llamacpp":
			e.count = serverCount{}
		}
	}
	if e.streamURL == "" {
		e.streamURL = e.url
	}
	e.key = d.APIKey
	var responsesURL string
	if d.ResponsesNative {
		responsesURL = d.APIBase + "/responses"
		if d.Kind == modellist.KindOllama {
			responsesURL = d.APIBase + "/v1/responses"
		}
	}
	e.settle(responsesURL)
	return e
}

// settle fills the table of targets by client format from the endpoint's
// URLs, so that a request only looks its format up.
func (e *httpEndpoint) settle(responsesURL string) {
	for cf := range e.targets {
		t := target{url: e.url, stream: e.streamURL}
		switch providers.Format(cf) {
		case providers.FormatEmbeddings, providers.FormatGeminiEmbed:
			t.url, t.stream = e.embedURL, e.embedURL
		case providers.FormatResponses:
			if responsesURL != "" {
				t.url, t.stream = responsesURL, responsesURL
			}
		case providers.FormatAnthropic:
			t.passAnthropic = e.passAnthropic
		}
		e.targets[cf] = t
	}
	e.native = responsesURL != ""
}

// target is where requests of one client format go.
type target struct {
	url, stream string
	// passAnthropic: an Anthropic client's query, version and betas go
	// through to an Anthropic upstream.
	passAnthropic bool
}

// httpEndpoint is an upstream reached with a fixed key in a header:
// OpenAI-compatible servers, Anthropic, Gemini, Ollama and echo.
type httpEndpoint struct {
	up        providers.Format
	url       string // full upstream endpoint, without query
	streamURL string // url but for Gemini, whose streams have their own action
	embedURL  string // "" when the upstream has no embeddings
	// targets is where each client format's requests go (indexed by
	// providers.Format, as Deployment.routes is), from the URLs above.
	targets             [providers.FormatCount]target
	native              bool // Responses requests go to the server's own /responses
	key                 string
	count               tokenCounter
	passAnthropic       bool // an Anthropic client's query, version and betas go through
	pinVersion, pinBeta bool // extra_headers pin Anthropic-Version / Anthropic-Beta
	// anthropicOwn: the upstream is Anthropic's own API, the one server
	// that reads Claude Code's ?beta=true.
	anthropicOwn bool
}

// query is the client's query as an Anthropic upstream gets it: whole for
// Anthropic's own API; without beta for other Anthropic-compatible servers,
// since a strict one 404s on it and Claude Code then reports a model
// problem.
func (e *httpEndpoint) query(raw string) string {
	if e.anthropicOwn || !strings.Contains(raw, "beta") {
		return raw
	}
	parts := strings.Split(raw, "&")
	kept := parts[:0]
	for _, p := range parts {
		k, _, _ := strings.Cut(p, "=")
		if k != "beta" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "&")
}

func (e *httpEndpoint) format() providers.Format { return e.up }
func (e *httpEndpoint) nativeResponses() bool    { return e.native }
func (e *httpEndpoint) embeddings() bool         { return e.embedURL != "" }
func (e *httpEndpoint) counter() tokenCounter    { return e.count }

func (e *httpEndpoint) credentials(h http.Header) {
	switch e.up {
	case providers.FormatAnthropic:
		h.Set("X-Api-Key", e.key)
		h.Set("Anthropic-Version", "2023-06-01")
	case providers.FormatGemini:
		// Google takes ?key= too; a header keeps it out of URLs and logs.
		h.Set("X-Goog-Api-Key", e.key)
	default:
		if e.key != "" {
			h.Set("Authorization", "Bearer "+e.key)
		}
	}
}

func (e *httpEndpoint) prepare(cf providers.Format, body []byte, client ClientMeta, stream bool) (string, []byte, error) {
	t := &e.targets[cf]
	u := t.url
	if stream {
		u = t.stream
	}
	if t.passAnthropic && client.Query != "" {
		if q := e.query(client.Query); q != "" {
			u += "?" + q
		}
	}
	return u, body, nil
}

func (e *httpEndpoint) authorize(_ context.Context, req *http.Request, cf providers.Format, client ClientMeta, _ []byte) error {
	if !e.targets[cf].passAnthropic {
		return nil
	}
	// An Anthropic client's version and betas go through unless the
	// deployment's extra_headers pin them.
	if v := client.AnthropicVersion; len(v) > 0 && !e.pinVersion {
		req.Header["Anthropic-Version"] = v
	}
	if v := client.AnthropicBeta; len(v) > 0 && !e.pinBeta {
		req.Header["Anthropic-Beta"] = v
	}
	return nil
}

func (e *httpEndpoint) events(body io.Reader, br *bufio.Reader) providers.EventReader {
	return providers.NewSSEReader(body, br)
}

func (e *httpEndpoint) parseError(status int, _ http.Header, body []byte) *providers.APIError {
	apiErr := providers.UpstreamError(status, body)
	if e.up == providers.FormatAnthropic && providers.IsAnthropicError(body) {
		// Same family: a Messages client gets the upstream's own answer.
		apiErr.Raw, apiErr.RawFamily = append([]byte(nil), body...), apierror.Anthropic
	}
	return apiErr
}
