package upstream

// Claude on AWS Bedrock and Google Vertex AI: the Anthropic Messages wire
// format at another address, with the cloud's own authentication and, for
// Bedrock, its own stream framing. The routes (providers.Route) are the
// Anthropic ones; an endpoint (endpoint.go) does the rest, built once per deployment.

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/providers"
)

// cloud is what bedrock/ and vertex_ai/ endpoints share: the Messages
// format at an address that depends on the model, credentials per request
// (so no fixed ones), credentials that go stale, and a free count of their
// own. Neither has embeddings or a native Responses API.
type cloud struct{}

func (cloud) format() providers.Format { return providers.FormatAnthropic }

func (cloud) credentialsRefused(status int, message string) bool {
	return credentialsRejected(status, message)
}

// cloudCounter is a cloud's free count: its request and its answer.
type cloudCounter interface {
	// prepareCount turns a count_tokens body into the cloud's and names
	// the URL to post it to.
	prepareCount(body []byte, client ClientMeta) (url string, out []byte, err error)
	// countResult reads the cloud's answer to prepareCount.
	countResult(raw []byte) (int, error)
}

// CredentialError is a cloud credential that could not be had: the AWS
// chain found none, the token endpoint refused the service account.
type CredentialError struct{ msg string }

func (e *CredentialError) Error() string { return e.msg }

// credentialsRejected reports whether a cloud's answer means the
// deployment's credentials are wrong or stale rather than the request:
// AWS's expired or unknown keys, Google's invalid token. Another
// deployment, or this one with fresh credentials, may succeed.
func credentialsRejected(status int, message string) bool {
	switch {
	case status == http.StatusUnauthorized:
		return true
	case status != http.StatusForbidden:
		return false
	}
	for _, s := range [...]string{"ExpiredToken", "UnrecognizedClient", "InvalidSignature", "IncompleteSignature", "security token included in the request is", "signature we calculated does not match"} {
		if strings.Contains(message, s) {
			return true
		}
	}
	return false
}

// awsEscape escapes a path segment as AWS's SDKs do: everything but the
// unreserved characters, so that a model id's ':' and an inference
// profile ARN's '/' stay inside the one segment.
func awsEscape(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
	return b.String()
}

// bedrockEndpoint signs InvokeModel calls with SigV4.
type bedrockEndpoint struct {
	cloud
	model  string // <base>/model/<escaped id>
	region string
	creds  *aws.CredentialsCache
	// chainErr is why the AWS chain could not be set up (a broken shared
	// config file, an unknown AWS_PROFILE), reported on each request.
	chainErr error
	signer   *v4.Signer
	static   []string
	now      func() time.Time
}

func newBedrockEndpoint(d *modellist.Deployment) *bedrockEndpoint {
	a := d.AWS
	e := &bedrockEndpoint{model: d.APIBase + "/model/" + awsEscape(d.Model), region: a.Region, signer: v4.NewSigner(), now: time.Now}
	if a.Static() {
		e.creds = aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(a.AccessKeyID, a.SecretAccessKey, a.SessionToken))
		e.static = []string{a.AccessKeyID, a.SecretAccessKey, a.SessionToken}
		return e
	}
	// The standard chain: environment, shared files and profiles, SSO,
	// web identity, container and instance roles. Loading it reads files
	// only; credentials are fetched (and refreshed) on first use.
	cfg, err := config.LoadDefaultConfig(context.Background(), config.WithRegion(a.Region))
	if err != nil {
		e.chainErr = err
		return e
	}
	if c, ok := cfg.Credentials.(*aws.CredentialsCache); ok {
		e.creds = c
	} else {
		e.creds = aws.NewCredentialsCache(cfg.Credentials)
	}
	return e
}

func (e *bedrockEndpoint) prepare(_ providers.Format, body []byte, client ClientMeta, stream bool) (string, []byte, error) {
	out, err := providers.BedrockBody(body, providers.BedrockBetas(client.AnthropicBeta))
	if stream {
		return e.model + "/invoke-with-response-stream", out, err
	}
	return e.model + "/invoke", out, err
}

func (e *bedrockEndpoint) counter() tokenCounter { return cloudCount{e} }

func (e *bedrockEndpoint) prepareCount(body []byte, client ClientMeta) (string, []byte, error) {
	out, err := providers.BedrockCountBody(body, providers.BedrockBetas(client.AnthropicBeta))
	return e.model + "/count-tokens", out, err
}

func (e *bedrockEndpoint) countResult(raw []byte) (int, error) {
	return providers.BedrockCountResult(raw)
}

func (e *bedrockEndpoint) authorize(ctx context.Context, req *http.Request, _ providers.Format, _ ClientMeta, body []byte) error {
	if e.chainErr != nil {
		return &CredentialError{"the AWS configuration could not be loaded: " + e.chainErr.Error()}
	}
	c, err := e.creds.Retrieve(ctx)
	if err != nil {
		return &CredentialError{"no AWS credentials: set aws_access_key_id and aws_secret_access_key on the entry, or provide them to the AWS chain (AWS_ACCESS_KEY_ID, AWS_PROFILE, an instance role): " + err.Error()}
	}
	sum := sha256.Sum256(body)
	if stream := strings.HasSuffix(req.URL.Path, "-stream"); stream {
		req.Header.Set("Accept", "application/vnd.amazon.eventstream")
	} else {
		req.Header.Set("Accept", "application/json")
	}
	// The body is a byte slice the signature covers: no chunked upload.
	req.ContentLength = int64(len(body))
	return e.signer.SignHTTP(ctx, c, req, hex.EncodeToString(sum[:]), "bedrock", e.region, e.now())
}

// events reads AWS event-stream frames, Bedrock's stream framing.
func (e *bedrockEndpoint) events(body io.Reader, br *bufio.Reader) providers.EventReader {
	br.Reset(body)
	return providers.NewBedrockEventReader(br)
}

func (e *bedrockEndpoint) rejected() bool {
	if e.creds == nil || e.static != nil {
		return false
	}
	e.creds.Invalidate()
	return true
}

func (e *bedrockEndpoint) parseError(status int, h http.Header, body []byte) *providers.APIError {
	return cloudError(status, h.Get("X-Amzn-Errortype"), body)
}

func (e *bedrockEndpoint) secrets() []string { return e.static }

// vertexEndpoint authenticates rawPredict calls with an OAuth token from a
// service account.
type vertexEndpoint struct {
	cloud
	models string // <base>/v1/projects/<p>/locations/<l>/publishers/anthropic/models/
	model  string // the deployment's model, escaped
	name   string // the model as configured, for count-tokens' body
	conf   interface {
		TokenSource(context.Context) oauth2.TokenSource
	}
	// tokenCtx carries the client that reaches the token endpoint: tokens
	// are fetched outside any one request, which must not cancel a fetch
	// others wait on.
	tokenCtx  context.Context
	transport *http.Transport
	key       string
	passBeta  [providers.FormatCount]bool // by client format, as Deployment.routes is indexed

	mu    sync.Mutex
	ts    oauth2.TokenSource // caches the token and refreshes it before expiry
	token string             // the last one handed out, for redaction
}

// vertexScope is the scope Vertex AI accepts for prediction calls.
const vertexScope = "https://www.googleapis.com/auth/cloud-platform"

func newVertexEndpoint(d *modellist.Deployment) *vertexEndpoint {
	v := d.Vertex
	e := &vertexEndpoint{
		models: d.APIBase + "/v1/projects/" + awsEscape(v.Project) + "/locations/" + v.Location + "/publishers/anthropic/models/",
		model:  pathEscape(d.Model),
		name:   d.Model,
	}
	// Only an Anthropic client's betas go through, unless extra_headers
	// pin them.
	_, pinned := d.ExtraHeaders["Anthropic-Beta"]
	e.passBeta[providers.FormatAnthropic] = !pinned
	// The token endpoint is Google's (or the file's token_uri), never the
	// deployment's api_base: it gets its own connections, without the
	// deployment's TLS settings.
	e.transport = &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		IdleConnTimeout:     2 * time.Minute,
	}
	e.tokenCtx = context.WithValue(context.Background(), oauth2.HTTPClient,
		&http.Client{Transport: e.transport, Timeout: 30 * time.Second})
	if v.ADC {
		e.conf = adcConf{}
		e.ts = e.conf.TokenSource(e.tokenCtx)
		return e
	}
	conf, err := google.JWTConfigFromJSON(v.Credentials, vertexScope)
	if err != nil {
		// modellist checked the file; this is unreachable short of a
		// change in what the library accepts.
		e.conf = failingConf{err}
	} else {
		e.key = string(conf.PrivateKey)
		e.conf = conf
	}
	e.ts = e.conf.TokenSource(e.tokenCtx)
	return e
}

// failingConf stands in for a service account the library refused.
type failingConf struct{ err error }

func (f failingConf) TokenSource(context.Context) oauth2.TokenSource { return f }
func (f failingConf) Token() (*oauth2.Token, error)                  { return nil, f.err }

// adcConf takes tokens from Application Default Credentials: the file
// GOOGLE_APPLICATION_CREDENTIALS names, gcloud's application-default
// login, or the metadata server of GCE, GKE (workload identity) and Cloud
// Run. They are looked up when a request first needs a token, not at
// load, since the metadata probe is network traffic.
type adcConf struct{}

func (adcConf) TokenSource(ctx context.Context) oauth2.TokenSource { return &adcSource{ctx: ctx} }

type adcSource struct {
	ctx context.Context
	mu  sync.Mutex
	ts  oauth2.TokenSource // nil until the credentials are found
}

func (s *adcSource) Token() (*oauth2.Token, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ts == nil {
		// A failed lookup is not kept: credentials may appear (a mounted
		// file, the metadata server coming up) without a reload.
		creds, err := google.FindDefaultCredentials(s.ctx, vertexScope)
		if err != nil {
			return nil, err
		}
		s.ts = creds.TokenSource
	}
	return s.ts.Token()
}

// pathEscape keeps a Vertex model name ("claude-sonnet-4-5@20250929")
// readable while escaping what would leave the path segment.
func pathEscape(s string) string {
	r := strings.NewReplacer("%", "%25", "/", "%2F", "?", "%3F", "#", "%23", " ", "%20")
	return r.Replace(s)
}

func (e *vertexEndpoint) prepare(_ providers.Format, body []byte, _ ClientMeta, stream bool) (string, []byte, error) {
	out, err := providers.VertexBody(body)
	if stream {
		return e.models + e.model + ":streamRawPredict", out, err
	}
	return e.models + e.model + ":rawPredict", out, err
}

func (e *vertexEndpoint) counter() tokenCounter { return cloudCount{e} }

func (e *vertexEndpoint) prepareCount(body []byte, _ ClientMeta) (string, []byte, error) {
	out, err := providers.VertexCountBody(body, e.name)
	return e.models + "count-tokens:rawPredict", out, err
}

func (e *vertexEndpoint) countResult(raw []byte) (int, error) {
	u := providers.AnthropicUsageFromBody(append(append([]byte(`{"usage":`), raw...), '}'))
	if !u.Seen {
		return 0, errors.New("the token count could not be read")
	}
	return int(u.InputTokens), nil
}

func (e *vertexEndpoint) authorize(_ context.Context, req *http.Request, cf providers.Format, client ClientMeta, _ []byte) error {
	if e.passBeta[cf] {
		// Vertex takes betas as Anthropic does, in the header; Bedrock
		// has them in the body already (prepare).
		if v := client.AnthropicBeta; len(v) > 0 {
			req.Header["Anthropic-Beta"] = v
		}
	}
	e.mu.Lock()
	ts := e.ts
	e.mu.Unlock()
	tok, err := ts.Token()
	if err != nil {
		if _, adc := e.conf.(adcConf); adc {
			return &CredentialError{"no Vertex AI access token from Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, or the metadata server), or give vertex_credentials: " + err.Error()}
		}
		return &CredentialError{"no Vertex AI access token for the service account in vertex_credentials: " + err.Error()}
	}
	e.mu.Lock()
	e.token = tok.AccessToken
	e.mu.Unlock()
	req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	return nil
}

func (e *vertexEndpoint) events(body io.Reader, br *bufio.Reader) providers.EventReader {
	return providers.NewSSEReader(body, br)
}

// rejected drops the cached token: the next request signs a new
// assertion.
func (e *vertexEndpoint) rejected() bool {
	e.mu.Lock()
	e.ts = e.conf.TokenSource(e.tokenCtx)
	e.mu.Unlock()
	return true
}

func (e *vertexEndpoint) parseError(status int, _ http.Header, body []byte) *providers.APIError {
	return cloudError(status, "", body)
}

func (e *vertexEndpoint) secrets() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return []string{e.key, e.token}
}

// Close drops the token endpoint's idle connections, which are the
// endpoint's own.
func (e *vertexEndpoint) Close() error {
	e.transport.CloseIdleConnections()
	return nil
}

// ParseError reads the deployment's error answer into the client's
// error, in the deployment's dialect (a cloud names its exception or
// status apart from the body), without its secrets.
func (b *Deployment) ParseError(status int, h http.Header, body []byte) *providers.APIError {
	return b.Redact(b.ep.parseError(status, h, body))
}

// cloudError reads a cloud's error answer into the client's error, the
// exception or status name (errorType) leading the cloud's message.
func cloudError(status int, errorType string, body []byte) *providers.APIError {
	return &providers.APIError{Status: status, Message: providers.CloudErrorMessage(errorType, body)}
}
