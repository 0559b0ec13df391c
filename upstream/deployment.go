// Package upstream is the client side of the gateway: one Deployment per
// models-file entry, ready to be called, with its endpoint (URLs,
// credentials and cloud signing, free token counts, stream framing), the
// redaction of its secrets from upstream text, and its runtime state
// (cooldowns, latency, rate windows) and the routing strategies that read
// it. It knows nothing of the client's request beyond its format.
package upstream

import (
	"bufio"
	"context"
	"io"
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

// Deployment is one models-file entry ready to be called.
type Deployment struct {
	dep    *modellist.Deployment
	client *http.Client
	state  *State
	policy policy
	// ep is the upstream as the deployment's kind addresses it: URLs,
	// credentials, count strategy, stream framing.
	ep endpoint
	// What only some endpoints do, asked of ep once in New: nil (false)
	// when its kind does not.
	renewer    credentialRenewer
	holder     secretHolder
	closer     io.Closer
	embeddings bool
	header     http.Header // credentials, defaults and extra_headers, cloned per request
	// routes holds the translation for each client format (indexed by
	// providers.Format): built once, so no request switches on formats.
	routes  [providers.FormatCount]providers.Route
	opts    providers.RouteOptions
	prices  ledger.Prices
	timeout time.Duration
	gap     time.Duration // stream_timeout: longest allowed pause between events
	first   time.Duration // first_token_timeout: longest wait for a stream's first content
	secrets []string      // what Redact removes from upstream text
	targets postTargets   // the URLs posted to, parsed once
}

// Options is what a deployment is built from besides its entry.
type Options struct {
	Client *http.Client
	// State is the deployment's runtime state, kept across reloads by
	// its owner.
	State  *State
	Router modellist.RouterSettings
	// DefaultTimeout applies when neither the entry nor router_settings
	// set one.
	DefaultTimeout time.Duration
	// DefaultMaxTokens is the max_tokens a translation to a format that
	// requires one writes when the client gave none.
	DefaultMaxTokens int64
}

// New builds the deployment for entry d: its endpoint, header, routes,
// prices and policy, once, when the models file loads.
func New(d *modellist.Deployment, o Options) *Deployment {
	b := &Deployment{dep: d, client: o.Client, state: o.State, ep: newEndpoint(d)}
	rs := o.Router
	b.timeout = firstDuration(d.Timeout, rs.Timeout, o.DefaultTimeout)
	b.gap = firstDuration(d.StreamTimeout, rs.StreamTimeout)
	b.first = firstDuration(d.FirstTokenTimeout, rs.FirstTokenTimeout)
	b.policy = policy{allowedFails: rs.AllowedFails, failWindow: time.Minute, cooldown: rs.CooldownTime, rpm: d.RPM, tpm: d.TPM}
	b.prices = pricesFor(d)
	b.header = upstreamHeader(d, b.ep)
	b.renewer, _ = b.ep.(credentialRenewer)
	b.holder, _ = b.ep.(secretHolder)
	b.closer, _ = b.ep.(io.Closer)
	var native bool
	if x, ok := b.ep.(extraEndpoints); ok {
		b.embeddings, native = x.embeddings(), x.nativeResponses()
	}
	upstream := b.ep.format()
	for _, cf := range providers.ClientFormats() {
		up := upstream
		if cf == providers.FormatResponses && native {
			up = providers.FormatResponses
		}
		rt, err := providers.NewRoute(cf, up)
		if err != nil {
			// Every upstream format has a route from every client format.
			panic(err)
		}
		b.routes[cf] = rt
	}
	b.opts = providers.RouteOptions{DefaultMaxTokens: o.DefaultMaxTokens, Cloud: !d.Local}
	b.secrets = secretsOf(d)
	return b
}

// upstreamHeader is what every request to the deployment carries: its own
// credentials (never the client's), the defaults, then extra_headers.
func upstreamHeader(d *modellist.Deployment, ep endpoint) http.Header {
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "modelgate")
	if c, ok := ep.(fixedCredentials); ok {
		c.credentials(h)
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
// cloud models; local backends cost nothing unless the YAML says so. An
// input price given without cache prices brings cache prices in the
// provider's proportions (ledger.CachePricesFor), so a negotiated or
// unlisted Claude rate still bills a 1-hour write at twice its input.
func pricesFor(d *modellist.Deployment) ledger.Prices {
	var p ledger.Prices
	// A seat's notional cost is its list price wherever it is served.
	if !d.Local || d.PassthroughAuth {
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
		if r, w5, w1, ok := ledger.CachePricesFor(d.Provider, d.Model, p.Input); ok {
			p.CacheRead, p.CacheWrite5m, p.CacheWrite1h = r, w5, w1
		}
	}
	if i.OutputCostPerToken != nil {
		p.Output = *i.OutputCostPerToken
	}
	if i.CacheReadInputTokenCost != nil {
		p.CacheRead = *i.CacheReadInputTokenCost
	}
	if i.CacheCreationInputTokenCost != nil {
		p.CacheWrite5m = *i.CacheCreationInputTokenCost
		if !ledger.IsClaude(d.Provider, d.Model) {
			// Only Claude has a second cache TTL; elsewhere a write is a write.
			p.CacheWrite1h = p.CacheWrite5m
		}
	}
	if i.CacheCreation1hInputTokenCost != nil {
		p.CacheWrite1h = *i.CacheCreation1hInputTokenCost
	}
	return p
}

// Route is the translation for requests in client format cf.
func (b *Deployment) Route(cf providers.Format) *providers.Route { return &b.routes[cf] }

// Body translates the client's body for this deployment.
func (b *Deployment) Body(cf providers.Format, body []byte, info providers.RequestInfo) (out []byte, dropUsage bool, err error) {
	return b.Route(cf).Request(body, info, b.dep.Model, b.opts)
}

// NewRequest builds the upstream HTTP request with the deployment's own
// credentials; nothing of the client's authentication is forwarded. An
// error is a *providers.APIError for a body the upstream's dialect
// refuses, a *CredentialError for credentials that could not be had, or
// another failure to build the request.
func (b *Deployment) NewRequest(ctx context.Context, cf providers.Format, client ClientMeta, body []byte, stream bool) (*http.Request, error) {
	url, out, err := b.ep.prepare(cf, body, client, stream)
	if err != nil {
		return nil, err
	}
	return b.postRequest(ctx, cf, client, url, out)
}

// postRequest posts body to url, authenticated for the endpoint.
func (b *Deployment) postRequest(ctx context.Context, cf providers.Format, client ClientMeta, url string, body []byte) (*http.Request, error) {
	req, err := b.targets.newPost(ctx, url, body)
	if err != nil {
		return nil, err
	}
	req.Header = b.header.Clone()
	if b.dep.PassthroughAuth {
		if err := b.seatCredentials(req.Header, client); err != nil {
			return nil, err
		}
	}
	if err := b.ep.authorize(ctx, req, cf, client, body); err != nil {
		return nil, err
	}
	return req, nil
}

// Events reads the upstream's stream for route rt: NDJSON when the route
// says so (Ollama's native API), else in the endpoint's framing.
func (b *Deployment) Events(rt *providers.Route, body io.Reader, br *bufio.Reader) providers.EventReader {
	if rt.NDJSON {
		return providers.NewNDJSONReader(body, br)
	}
	return b.ep.events(body, br)
}

// ClientSet shares one transport per upstream base so deployments of one
// server share connections.
type ClientSet struct {
	mu sync.Mutex
	m  map[string]*http.Client
}

// NewClientSet returns an empty set.
func NewClientSet() *ClientSet { return &ClientSet{m: make(map[string]*http.Client)} }

// ForDeployment is the client for d: the built-in echo transport, or the
// connections shared with every deployment of d's server and TLS settings.
func (c *ClientSet) ForDeployment(d *modellist.Deployment) *http.Client {
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
	var rt http.RoundTripper = t
	if plainHTTP && d.TLS == nil && noProxy(d.APIBase) {
		rt = newPlainTransport(t)
	}
	cl := &http.Client{Transport: rt, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c.m[key] = cl
	return cl
}

// noProxy says apiBase is a plain-HTTP URL that the environment's
// HTTP_PROXY and NO_PROXY send direct, so the plain transport may carry it.
func noProxy(apiBase string) bool {
	u, err := url.Parse(apiBase)
	if err != nil || u.Scheme != "http" || u.Host == "" {
		return false
	}
	proxy, err := http.ProxyFromEnvironment(&http.Request{URL: u})
	return err == nil && proxy == nil
}

// Header is what every call to the deployment carries (its own
// credentials, never a client's; the defaults; extra_headers), a copy:
// for calls the gateway makes besides requests (a provider's batch API).
func (b *Deployment) Header() http.Header { return b.header.Clone() }

// Entry is the deployment's models-file entry.
func (b *Deployment) Entry() *modellist.Deployment { return b.dep }

// State is the deployment's runtime state.
func (b *Deployment) State() *State { return b.state }

// Client is the HTTP client the deployment is called with.
func (b *Deployment) Client() *http.Client { return b.client }

// Do sends req to the upstream and returns its answer as it is: a
// redirect is never followed (the client's CheckRedirect keeps it), so the
// transport is called directly, without http.Client's per-request copy of
// the headers for redirects that never come.
func (b *Deployment) Do(req *http.Request) (*http.Response, error) {
	if t := b.client.Transport; t != nil {
		return t.RoundTrip(req)
	}
	return http.DefaultTransport.RoundTrip(req)
}

// Timeout bounds one attempt.
func (b *Deployment) Timeout() time.Duration { return b.timeout }

// StreamTimeout is the longest allowed pause between stream events; 0
// for none.
func (b *Deployment) StreamTimeout() time.Duration { return b.gap }

// FirstTokenTimeout is the longest a stream may take to send its first
// content before the attempt is given up for the next one; 0: none.
func (b *Deployment) FirstTokenTimeout() time.Duration { return b.first }

// Prices are the deployment's prices per token.
func (b *Deployment) Prices() ledger.Prices { return b.prices }

// Embeddings reports whether the upstream has an embeddings endpoint.
func (b *Deployment) Embeddings() bool { return b.embeddings }

// Admit decides whether a request may use the deployment now, counting
// it against the rate window when it may; probe reports that the caller
// holds the one probe of a deployment whose cooldown expired, to hand
// back through Success, Failure or State().Release.
func (b *Deployment) Admit(now time.Time) (res Admission, wait time.Duration, probe bool) {
	return b.state.admit(now, b.policy)
}

// Failure counts a failed attempt under the deployment's policy and
// reports whether a cooldown started; down means the server refused the
// connection, which starts one at once.
func (b *Deployment) Failure(now time.Time, down bool) bool {
	return b.state.failure(now, b.policy, down)
}

// CredentialsRefused reports whether an error answer means the
// deployment's credentials are wrong or stale rather than the request:
// another deployment may serve it.
func (b *Deployment) CredentialsRefused(status int, message string) bool {
	return b.renewer != nil && b.renewer.credentialsRefused(status, message)
}

// Close releases what the endpoint holds beyond the shared client.
func (b *Deployment) Close() {
	if b.closer != nil {
		_ = b.closer.Close() // closing idle connections fails never
	}
}

// MaxAnswer bounds a non-streaming upstream answer held in memory for
// translation or usage reading.
const MaxAnswer = 64 << 20

// ReadAnswer reads a non-streaming answer of up to MaxAnswer bytes, in
// one buffer sized from the answer's Content-Length when it has one,
// where io.ReadAll would grow from 512 bytes by doubling. Up to 64 KiB
// only: a length is the upstream's word, not yet its bytes, and an
// upstream that claims megabytes and sends little must not make every
// request hold them; a longer answer grows from there.
func ReadAnswer(resp *http.Response) ([]byte, error) {
	size := 512
	if n := resp.ContentLength; n >= 0 {
		size = int(min(n, 64<<10)) + 1 // +1: the read that meets the end needs no room
	}
	r := io.LimitReader(resp.Body, MaxAnswer)
	b := make([]byte, 0, size)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grown as append grows
		}
	}
}
