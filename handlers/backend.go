package handlers

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/providers"
)

// backend is one deployment ready to be called.
type backend struct {
	dep    *modellist.Deployment
	client *http.Client
	state  *DeploymentState
	policy policy
	url    string // full upstream endpoint, without query
	// streamURL is where streaming requests go: url but for Gemini,
	// whose streams have their own action. countURL is Google's free
	// countTokens, for gemini/ deployments.
	streamURL, countURL string
	// responsesURL is the server's own /responses, for deployments that
	// take Responses requests natively; "" when they are translated.
	responsesURL string
	header       http.Header // credentials, defaults and extra_headers, cloned per request
	upstream     providers.Format
	// routes holds the translation for each client format (indexed by
	// providers.Format): built once, so no request switches on formats.
	routes  [providers.FormatCount]providers.Route
	opts    providers.RouteOptions
	prices  ledger.Prices
	timeout time.Duration
	gap     time.Duration // stream_timeout: longest allowed pause between events
	secrets []string      // what upstreamError removes from upstream text
	// cloud, for Claude on Bedrock or Vertex AI, addresses, authenticates
	// and frames what the Anthropic routes produce; nil for the rest.
	cloud cloudEndpoint
	// embedURL is the upstream's embeddings endpoint; empty when it has none.
	embedURL string
}

const (
	echoURL      = "http://echo.modelgate.invalid/v1/chat/completions"
	echoEmbedURL = "http://echo.modelgate.invalid/v1/embeddings"
)

func newBackend(d *modellist.Deployment, c *http.Client, st *DeploymentState, rs modellist.RouterSettings, defaultTimeout time.Duration, defaultMaxTokens int64) *backend {
	b := &backend{dep: d, client: c, state: st}
	switch d.Kind {
	case modellist.KindAnthropic:
		b.url, b.upstream = d.APIBase+"/v1/messages", providers.FormatAnthropic
	case modellist.KindBedrock, modellist.KindVertex:
		// The URL depends on the model and on streaming: cloud.prepare.
		b.upstream, b.cloud = providers.FormatAnthropic, newCloudEndpoint(d)
	case modellist.KindOllama:
		b.url, b.upstream = d.APIBase+"/api/chat", providers.FormatOllama
	case modellist.KindEcho:
		b.url, b.upstream = echoURL, providers.FormatOpenAI
	case modellist.KindGemini:
		model := d.APIBase + "/v1beta/models/" + url.PathEscape(d.Model)
		b.url, b.upstream = model+":generateContent", providers.FormatGemini
		b.streamURL, b.countURL, b.embedURL = model+":streamGenerateContent?alt=sse", model+":countTokens", model+":batchEmbedContents"
	default:
		b.url, b.upstream = d.APIBase+"/chat/completions", providers.FormatOpenAI
	}
	if b.streamURL == "" {
		b.streamURL = b.url
	}
	switch d.Kind {
	case modellist.KindOpenAI:
		b.embedURL = d.APIBase + "/embeddings"
	case modellist.KindOllama:
		b.embedURL = d.APIBase + "/api/embed"
	case modellist.KindEcho:
		b.embedURL = echoEmbedURL
	}
	b.timeout = firstDuration(d.Timeout, rs.Timeout, defaultTimeout)
	b.gap = firstDuration(d.StreamTimeout, rs.StreamTimeout)
	b.policy = policy{allowedFails: rs.AllowedFails, failWindow: time.Minute, cooldown: rs.CooldownTime, rpm: d.RPM, tpm: d.TPM}
	b.prices = pricesFor(d)
	b.header = upstreamHeader(d, b.upstream)
	if d.ResponsesNative {
		b.responsesURL = d.APIBase + "/responses"
		if d.Kind == modellist.KindOllama {
			b.responsesURL = d.APIBase + "/v1/responses"
		}
	}
	for _, cf := range providers.ClientFormats() {
		up := b.upstream
		if cf == providers.FormatResponses && b.responsesURL != "" {
			up = providers.FormatResponses
		}
		rt, err := providers.NewRoute(cf, up)
		if err != nil {
			// Every upstream format has a route from every client format.
			panic(err)
		}
		b.routes[cf] = rt
	}
	b.opts = providers.RouteOptions{DefaultMaxTokens: defaultMaxTokens, Cloud: !d.Local}
	b.secrets = secretsOf(d)
	return b
}

// upstreamHeader is what every request to the deployment carries: its own
// credentials (never the client's), the defaults, then extra_headers.
func upstreamHeader(d *modellist.Deployment, up providers.Format) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "modelgate")
	switch {
	case d.Kind == modellist.KindBedrock || d.Kind == modellist.KindVertex:
		// Credentials are added per request (a signature, a token), and
		// the version travels in the body.
	case up == providers.FormatAnthropic:
		h.Set("X-Api-Key", d.APIKey)
		h.Set("Anthropic-Version", "2023-06-01")
	case up == providers.FormatGemini:
		// Google takes ?key= too; a header keeps it out of URLs and logs.
		h.Set("X-Goog-Api-Key", d.APIKey)
	default:
		if d.APIKey != "" {
			h.Set("Authorization", "Bearer "+d.APIKey)
		}
	}
	for k, v := range d.ExtraHeaders {
		h.Set(k, v)
	}
	return h
}

func firstDuration(ds ...time.Duration) time.Duration {
	for _, d := range ds {
		if d > 0 {
			return d
		}
	}
	return 0
}

// pricesFor takes model_info prices first, then the built-in table for
// cloud models; local backends cost nothing unless the YAML says so.
func pricesFor(d *modellist.Deployment) ledger.Prices {
	var p ledger.Prices
	if !d.Local {
		if bp, ok := ledger.BuiltinPrices(d.Provider, d.Model); ok {
			p = bp
			if d.Vertex != nil && d.Vertex.Location != "global" && ledger.HasRegionalPremium(d.Model) {
				p = ledger.WithRegionalPremium(p)
			}
		}
	}
	i := d.Info
	if i.InputCostPerToken != nil {
		p.Input = *i.InputCostPerToken
	}
	if i.OutputCostPerToken != nil {
		p.Output = *i.OutputCostPerToken
	}
	if i.CacheReadInputTokenCost != nil {
		p.CacheRead = *i.CacheReadInputTokenCost
	}
	if i.CacheCreationInputTokenCost != nil {
		p.CacheWrite5m = *i.CacheCreationInputTokenCost
		p.CacheWrite1h = *i.CacheCreationInputTokenCost
	}
	return p
}

// route is the translation for requests in client format cf.
func (b *backend) route(cf providers.Format) *providers.Route { return &b.routes[cf] }

// upstreamBody translates the client's body for this backend.
func (b *backend) upstreamBody(cf providers.Format, body []byte, info providers.RequestInfo) (out []byte, dropUsage bool, err error) {
	return b.route(cf).Request(body, info, b.dep.Model, b.opts)
}

// newRequest builds the upstream HTTP request with the deployment's own
// credentials; nothing of the client's authentication is forwarded.
func (b *backend) newRequest(ctx context.Context, cf providers.Format, client *http.Request, body []byte, stream bool) (*http.Request, error) {
	if b.cloud != nil {
		url, out, err := b.cloud.prepare(body, client.Header, stream)
		if err != nil {
			return nil, err
		}
		return b.cloudRequest(ctx, cf, client, url, out)
	}
	target := b.url
	switch {
	case cf == providers.FormatEmbeddings || cf == providers.FormatGeminiEmbed:
		target = b.embedURL
	case stream:
		target = b.streamURL
	}
	if cf == providers.FormatResponses && b.responsesURL != "" {
		target = b.responsesURL
	}
	if cf == providers.FormatAnthropic && b.upstream == providers.FormatAnthropic && client.URL.RawQuery != "" {
		target += "?" + client.URL.RawQuery
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = b.header.Clone()
	if cf == providers.FormatAnthropic && b.upstream == providers.FormatAnthropic {
		// An Anthropic client's version and betas go through unless the
		// deployment's extra_headers pin them.
		for _, k := range [...]string{"Anthropic-Version", "Anthropic-Beta"} {
			if _, pinned := b.dep.ExtraHeaders[k]; !pinned {
				if v := client.Header.Values(k); len(v) > 0 {
					req.Header[k] = v
				}
			}
		}
	}
	return req, nil
}

// cloudRequest posts body to a cloud's url, authenticated for it.
func (b *backend) cloudRequest(ctx context.Context, cf providers.Format, client *http.Request, url string, body []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header = b.header.Clone()
	if cf == providers.FormatAnthropic && b.dep.Kind == modellist.KindVertex {
		// Vertex takes betas as Anthropic does, in the header; Bedrock
		// has them in the body already (cloud.prepare).
		if _, pinned := b.dep.ExtraHeaders["Anthropic-Beta"]; !pinned {
			if v := client.Header.Values("Anthropic-Beta"); len(v) > 0 {
				req.Header["Anthropic-Beta"] = v
			}
		}
	}
	if err := b.cloud.authorize(ctx, req, body); err != nil {
		return nil, err
	}
	return req, nil
}

// clientSet shares one transport per upstream base so deployments of one
// server share connections.
type clientSet struct {
	mu sync.Mutex
	m  map[string]*http.Client
}

func newClientSet() *clientSet { return &clientSet{m: make(map[string]*http.Client)} }

func (c *clientSet) forDeployment(d *modellist.Deployment) *http.Client {
	if d.Kind == modellist.KindEcho {
		return &http.Client{Transport: providers.EchoTransport{}}
	}
	key := d.APIBase
	if i := strings.Index(key, "://"); i >= 0 {
		if j := strings.IndexByte(key[i+3:], '/'); j >= 0 {
			key = key[:i+3+j]
		}
	}
	// Deployments of one server with their own TLS settings (a private CA,
	// a client certificate) need their own connections.
	key += "\x00" + d.TLS.Key()
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[key]; ok {
		return cl
	}
	t := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		// A local server that is down refuses at once; a black-holed
		// address must not hold a request for long either.
		DialContext:           (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          1024,
		MaxIdleConnsPerHost:   256,
		IdleConnTimeout:       2 * time.Minute,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		// Streams are compressed by nobody upstream we know of, and a
		// transparent gzip would hide the byte boundaries we flush on.
		DisableCompression: true,
	}
	if d.TLS != nil {
		t.TLSClientConfig = d.TLS.Config.Clone()
	}
	cl := &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c.m[key] = cl
	return cl
}
