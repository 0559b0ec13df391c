package handlers

// Claude Code's Bedrock and Vertex modes pointed at the gateway
// (CLAUDE_CODE_USE_BEDROCK with ANTHROPIC_BEDROCK_BASE_URL, or
// CLAUDE_CODE_USE_VERTEX with ANTHROPIC_VERTEX_BASE_URL): Bedrock's
// InvokeModel and InvokeModelWithResponseStream and Vertex's rawPredict,
// streamRawPredict and count-tokens are Messages requests in another
// envelope. Each is unwrapped into the Messages request it carries (model
// from the URL, mapped to an alias; version and betas from the body),
// served by the same path as /v1/messages (auth, budgets, limits, routing
// to every backend kind, ledger), and its answer wrapped back: Vertex's is
// Anthropic's as it is; Bedrock's stream is framed as an AWS event stream
// and its errors take Bedrock's shape.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// ingressEndpoint is the context key carrying the ledger endpoint of a
// request that came in through a cloud envelope.
type ingressEndpoint struct{}

// vertexPath reports whether p is a Vertex publisher-model call, with or
// without the /v1 the Vertex SDK's base URL usually ends in.
func vertexPath(p string) bool {
	p = strings.TrimPrefix(p, "/v1")
	return strings.HasPrefix(p, "/projects/") && strings.Contains(p, "/publishers/anthropic/models/")
}

// cloudAlias maps a Bedrock or Vertex model id to an alias: the first of
// its names (providers.CloudModelNames) that is an alias or a
// model_aliases entry.
func (g *Gateway) cloudAlias(id string) (string, bool) {
	for _, n := range providers.CloudModelNames(id) {
		if a, ok := g.models.Resolve(n); ok {
			return a, true
		}
	}
	return "", false
}

// serveBedrock answers POST /model/{id}/invoke and
// /model/{id}/invoke-with-response-stream.
func (g *Gateway) serveBedrock(w http.ResponseWriter, r *http.Request) {
	id, action := bedrockOperation(r)
	if action == "converse" || action == "converse-stream" {
		g.serveConverse(w, r, action == "converse-stream")
		return
	}
	bw := &bedrockWriter{w: w, newFramer: providers.NewBedrockStreamFramer}
	defer bw.finish()
	var stream bool
	switch action {
	case "invoke", "count-tokens":
	case "invoke-with-response-stream":
		stream = true
	default:
		(&providers.APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("no Bedrock operation %q on this gateway; it serves /model/{id}/invoke, /model/{id}/invoke-with-response-stream, /model/{id}/converse, /model/{id}/converse-stream and /model/{id}/count-tokens", action)}).Write(bw, providers.FormatAnthropic)
		return
	}
	bw.stream = stream
	if r.Method != http.MethodPost {
		bw.Header().Set("Allow", http.MethodPost)
		(&providers.APIError{Status: http.StatusMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use POST"}).Write(bw, providers.FormatAnthropic)
		return
	}
	if action == "count-tokens" {
		g.serveBedrockCount(bw, r, id)
		return
	}
	g.serveCloudMessages(bw, r, id, &stream, ledger.EndpointBedrockInvoke)
}

// bedrockOperation splits a Bedrock runtime path, /model/{id}/{action},
// into its model id (unescaped: an ARN's slashes come escaped) and action.
func bedrockOperation(r *http.Request) (id, action string) {
	esc := strings.TrimPrefix(r.URL.EscapedPath(), "/model/")
	i := strings.LastIndexByte(esc, '/')
	if i <= 0 {
		return "", ""
	}
	id, _ = url.PathUnescape(esc[:i])
	return id, esc[i+1:]
}

// serveConverse answers Converse and ConverseStream (POST
// /model/{id}/converse and /converse-stream). Converse is a client format
// of its own (providers.FormatConverse: its parser, spoke, errors and
// ledger endpoint), served by the same path as every other; all this
// adapter adds is a stream's AWS event-stream framing.
func (g *Gateway) serveConverse(w http.ResponseWriter, r *http.Request, stream bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		(&providers.APIError{Status: http.StatusMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use POST"}).Write(w, providers.FormatConverse)
		return
	}
	if stream {
		w = &bedrockWriter{w: w, stream: true, newFramer: providers.NewConverseStreamFramer, keepErrors: true}
	}
	g.serveChat(w, r, providers.FormatConverse)
}

// parseConverse reads a Converse body for the alias its URL's model id
// maps to (cloudAlias); an id that maps to none is left as it is, for
// readRequest to refuse.
func (g *Gateway) parseConverse(r *http.Request, _ *policy.Identity, body []byte) (providers.RequestInfo, error) {
	id, action := bedrockOperation(r)
	if alias, ok := g.cloudAlias(id); ok {
		id = alias
	}
	return providers.FormatConverse.Parser()(body, id, action)
}

// serveBedrockCount answers Bedrock's CountTokens (POST
// /model/{id}/count-tokens): the InvokeModel body it wraps is counted as
// count_tokens counts, and the count answered as {"inputTokens":n}.
func (g *Gateway) serveBedrockCount(w http.ResponseWriter, r *http.Request, id string) {
	body, release, ok := g.readCloudBody(w, r)
	if !ok {
		return
	}
	defer release()
	alias, ok := g.cloudAlias(id)
	if !ok {
		(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q is not configured on this gateway; name an alias after it or map it in model_aliases", id)}).Write(w, providers.FormatAnthropic)
		return
	}
	msgs, betas, err := providers.CountFromBedrock(body, alias)
	if err != nil {
		asAPIError(err).Write(w, providers.FormatAnthropic)
		return
	}
	cw := &bufferedWriter{header: http.Header{}}
	g.serveCountTokens(cw, messagesRequest(r, msgs, betas, ledger.EndpointBedrockInvoke, "/v1/messages/count_tokens"))
	var n struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if cw.status >= 400 || json.Unmarshal(cw.body.Bytes(), &n) != nil || n.InputTokens == nil {
		for k, v := range cw.header {
			w.Header()[k] = v
		}
		w.WriteHeader(cw.status)
		_, _ = w.Write(cw.body.Bytes())
		return
	}
	writeJSON(w, http.StatusOK, []byte(`{"inputTokens":`+strconv.FormatInt(*n.InputTokens, 10)+`}`))
}

// bufferedWriter holds an answer for serveBedrockCount to re-shape.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }
func (b *bufferedWriter) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}
func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// serveVertex answers POST …/publishers/anthropic/models/{m}:rawPredict,
// {m}:streamRawPredict and count-tokens:rawPredict.
func (g *Gateway) serveVertex(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	rest := p[strings.Index(p, "/publishers/anthropic/models/")+len("/publishers/anthropic/models/"):]
	model, action, _ := strings.Cut(rest, ":")
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		(&providers.APIError{Status: http.StatusMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + p + "; use POST"}).Write(w, providers.FormatAnthropic)
		return
	}
	switch {
	case model == "count-tokens" && action == "rawPredict":
		g.serveVertexCount(w, r)
	case action == "rawPredict" || action == "streamRawPredict":
		g.serveCloudMessages(w, r, model, nil, ledger.EndpointVertexRawPredict)
	default:
		(&providers.APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("no Vertex action %q on this gateway; it serves :rawPredict, :streamRawPredict and count-tokens:rawPredict for Anthropic models", action)}).Write(w, providers.FormatAnthropic)
	}
}

// serveCloudMessages unwraps a Bedrock or Vertex body into the Messages
// request it carries and serves it as /v1/messages would.
func (g *Gateway) serveCloudMessages(w http.ResponseWriter, r *http.Request, id string, stream *bool, endpoint ledger.Endpoint) {
	body, release, ok := g.readCloudBody(w, r)
	if !ok {
		return
	}
	defer release()
	alias, ok := g.cloudAlias(id)
	if !ok {
		(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q is not configured on this gateway; name an alias after it or map it in model_aliases (its Anthropic id, e.g. claude-sonnet-4-5-20250929, is tried too)", id)}).Write(w, providers.FormatAnthropic)
		return
	}
	msgs, betas, err := providers.MessagesFromCloud(body, alias, stream)
	if err != nil {
		asAPIError(err).Write(w, providers.FormatAnthropic)
		return
	}
	g.serveChat(w, messagesRequest(r, msgs, betas, endpoint, "/v1/messages"), providers.FormatAnthropic)
}

// serveVertexCount answers Vertex's count-tokens:rawPredict, whose body
// names the model.
func (g *Gateway) serveVertexCount(w http.ResponseWriter, r *http.Request) {
	body, release, ok := g.readCloudBody(w, r)
	if !ok {
		return
	}
	defer release()
	info, err := providers.PeekRequest(body)
	if err != nil && info.Model == "" {
		asAPIError(err).Write(w, providers.FormatAnthropic)
		return
	}
	alias, ok := g.cloudAlias(info.Model)
	if !ok {
		(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q is not configured on this gateway; name an alias after it or map it in model_aliases", info.Model)}).Write(w, providers.FormatAnthropic)
		return
	}
	msgs, betas, err := providers.MessagesFromCloud(body, alias, nil)
	if err != nil {
		asAPIError(err).Write(w, providers.FormatAnthropic)
		return
	}
	g.serveCountTokens(w, messagesRequest(r, msgs, betas, ledger.EndpointVertexRawPredict, "/v1/messages/count_tokens"))
}

// readCloudBody reads an envelope's body as every client body is read
// (readBody): a Content-Encoding of gzip, deflate or zstd decoded,
// max_request_body bounding the wire and the decoded size, the buffer
// counted in the body memory until release, which the caller defers.
func (g *Gateway) readCloudBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), bool) {
	req := &clientRequest{buf: g.bodyPool.Get().(*[]byte)}
	if apiErr := g.readBody(w, r, req); apiErr != nil {
		g.releaseRequest(req)
		apiErr.Write(w, providers.FormatAnthropic)
		return nil, nil, false
	}
	return req.body, func() { g.releaseRequest(req) }, true
}

// messagesRequest is r as the /v1/messages request it carries: body,
// path, the betas as anthropic-beta (which every Anthropic-family route
// reads: passed to Anthropic, put back in Bedrock's body, kept for
// Vertex), Anthropic's API version, and the ledger endpoint.
func messagesRequest(r *http.Request, body []byte, betas []string, endpoint ledger.Endpoint, path string) *http.Request {
	m := r.Clone(context.WithValue(r.Context(), ingressEndpoint{}, endpoint))
	m.URL.Path, m.URL.RawPath, m.URL.RawQuery = path, "", ""
	m.Body, m.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	m.Header.Del("Content-Encoding")
	m.Header.Set("Content-Length", strconv.Itoa(len(body)))
	m.Header.Set("Anthropic-Version", "2023-06-01")
	m.Header.Del("Anthropic-Beta")
	if len(betas) > 0 {
		m.Header.Set("Anthropic-Beta", strings.Join(betas, ","))
	}
	return m
}

// bedrockWriter turns the answer written to it into Bedrock's: a success
// as it is (InvokeModel's body is the Messages response), a stream framed
// as an AWS event stream by the framer newFramer makes, an error as
// {"message":…} with the exception named in x-amzn-ErrorType, unless
// keepErrors says it was written in that shape already (Converse's).
type bedrockWriter struct {
	w          http.ResponseWriter
	stream     bool
	newFramer  func() *providers.BedrockStreamFramer
	keepErrors bool
	status     int
	errBuf     []byte
	framer     *providers.BedrockStreamFramer
	out        bytes.Buffer
}

func (b *bedrockWriter) Header() http.Header { return b.w.Header() }

func (b *bedrockWriter) WriteHeader(status int) {
	if b.status != 0 {
		return
	}
	b.status = status
	h := b.w.Header()
	if status >= 400 && !b.keepErrors {
		return // written by finish, once the body is whole
	}
	if b.stream && status == http.StatusOK {
		h.Del("Content-Length")
		h.Set("Content-Type", "application/vnd.amazon.eventstream")
		b.framer = b.newFramer()
	}
	b.w.WriteHeader(status)
}

func (b *bedrockWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.WriteHeader(http.StatusOK)
	}
	switch {
	case b.status >= 400 && !b.keepErrors:
		b.errBuf = append(b.errBuf, p...)
		return len(p), nil
	case b.framer != nil:
		b.out.Reset()
		if err := b.framer.Write(&b.out, p); err != nil {
			return 0, err
		}
		if _, err := b.w.Write(b.out.Bytes()); err != nil {
			return 0, err
		}
		return len(p), nil
	}
	return b.w.Write(p)
}

// Flush passes a stream's flushes on, so each event reaches the client
// when the upstream's does.
func (b *bedrockWriter) Flush() {
	if b.status < 400 || b.keepErrors {
		_ = http.NewResponseController(b.w).Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (b *bedrockWriter) Unwrap() http.ResponseWriter { return b.w }

// finish writes a buffered error in Bedrock's shape.
func (b *bedrockWriter) finish() {
	if b.status < 400 || b.keepErrors {
		return
	}
	writeBedrockError(b.w, b.status, providers.UpstreamError(b.status, b.errBuf).Message)
}

// writeBedrockError answers status in Bedrock's error shape: {"message":…}
// with the exception named in x-amzn-ErrorType, which the AWS SDKs read.
func writeBedrockError(w http.ResponseWriter, status int, message string) {
	body := apierror.BedrockBody(message)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Amzn-Errortype", apierror.BedrockErrorType(status))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// bedrockPath reports Bedrock's paths: the runtime's /model/{id}/… and the
// control plane's, which Claude Code's Bedrock mode calls first through the
// AWS SDK (GET /inference-profiles, without the gateway key it sends to the
// runtime) and whose refusal the SDK reads only in Bedrock's shape.
func bedrockPath(p string) bool {
	if strings.HasPrefix(p, "/model/") {
		return true
	}
	for _, cp := range [...]string{"/inference-profiles", "/foundation-models"} {
		if p == cp || strings.HasPrefix(p, cp+"/") {
			return true
		}
	}
	return false
}
