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
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

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
	var stream bool
	switch action {
	case "invoke", "count-tokens":
	case "invoke-with-response-stream":
		stream = true
	}
	bs := newBedrockSink(w, r, providers.FormatAnthropic, stream, providers.NewBedrockStreamFramer, false)
	switch {
	case action != "invoke" && action != "count-tokens" && !stream:
		bs.Fail(&providers.APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("no Bedrock operation %q on this gateway; it serves /model/{id}/invoke, /model/{id}/invoke-with-response-stream, /model/{id}/converse, /model/{id}/converse-stream and /model/{id}/count-tokens", action)})
	case r.Method != http.MethodPost:
		bs.Header().Set("Allow", http.MethodPost)
		bs.Fail(&providers.APIError{Status: http.StatusMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use POST"})
	case action == "count-tokens":
		g.serveBedrockCount(r, bs, id)
	default:
		g.serveCloudMessages(r, bs, id, &stream, ledger.EndpointBedrockInvoke)
	}
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
// ledger endpoint), served by the core like every other; all this
// adapter adds is a stream's AWS event-stream framing.
func (g *Gateway) serveConverse(w http.ResponseWriter, r *http.Request, stream bool) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		(&providers.APIError{Status: http.StatusMethodNotAllowed, Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use POST"}).Write(w, providers.FormatConverse)
		return
	}
	if stream {
		bs := newBedrockSink(w, r, providers.FormatConverse, true, providers.NewConverseStreamFramer, true)
		bs.call.Model, bs.call.Action = bedrockOperation(r)
		g.serve(r.Context(), &bs.call, bs)
		return
	}
	d := newHTTPDoor(w, r, providers.FormatConverse, providers.FormatConverse)
	d.call.Model, d.call.Action = bedrockOperation(r)
	g.serve(r.Context(), &d.call, d)
}

// parseConverse reads a Converse body for the alias its URL's model id
// maps to (cloudAlias); an id that maps to none is left as it is, for
// readRequest to refuse.
func (g *Gateway) parseConverse(_ context.Context, c *Call, body []byte) (providers.RequestInfo, error) {
	id := c.Model
	if alias, ok := g.cloudAlias(id); ok {
		id = alias
	}
	return providers.FormatConverse.Parser()(body, id, c.Action)
}

// serveBedrockCount answers Bedrock's CountTokens (POST
// /model/{id}/count-tokens): the InvokeModel body it wraps is counted as
// count_tokens counts, and the count answered as {"inputTokens":n}.
func (g *Gateway) serveBedrockCount(r *http.Request, out *bedrockSink, id string) {
	body, release, ok := g.readCloudBody(out)
	if !ok {
		return
	}
	defer release()
	alias, ok := g.cloudAlias(id)
	if !ok {
		out.Fail(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q is not configured on this gateway; name an alias after it or map it in model_aliases", id)})
		return
	}
	msgs, betas, err := providers.CountFromBedrock(body, alias)
	if err != nil {
		out.Fail(asAPIError(err))
		return
	}
	c := cloudCall(r, msgs, betas, ledger.EndpointBedrockInvoke)
	buf := newBufferSink()
	g.count(r.Context(), &c, buf)
	var n struct {
		InputTokens *int64 `json:"input_tokens"`
	}
	if buf.failed != nil || buf.status >= 400 || json.Unmarshal(buf.body.Bytes(), &n) != nil || n.InputTokens == nil {
		buf.replay(out)
		return
	}
	sinkJSON(out, http.StatusOK, []byte(`{"inputTokens":`+strconv.FormatInt(*n.InputTokens, 10)+`}`))
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
	d := newHTTPDoor(w, r, providers.FormatAnthropic, providers.FormatAnthropic)
	switch {
	case model == "count-tokens" && action == "rawPredict":
		g.serveVertexCount(r, d)
	case action == "rawPredict" || action == "streamRawPredict":
		g.serveCloudMessages(r, d, model, nil, ledger.EndpointVertexRawPredict)
	default:
		d.Fail(&providers.APIError{Status: http.StatusNotFound, Message: fmt.Sprintf("no Vertex action %q on this gateway; it serves :rawPredict, :streamRawPredict and count-tokens:rawPredict for Anthropic models", action)})
	}
}

// cloudDoor is the HTTP door of a cloud envelope: its request's body is
// read as an envelope, and its answer written in the cloud's way.
type cloudDoor interface {
	Sink
	door() *httpDoor
}

func (d *httpDoor) door() *httpDoor { return d }

// serveCloudMessages unwraps a Bedrock or Vertex body into the Messages
// request it carries and serves it as /v1/messages would.
func (g *Gateway) serveCloudMessages(r *http.Request, out cloudDoor, id string, stream *bool, endpoint ledger.Endpoint) {
	body, release, ok := g.readCloudBody(out)
	if !ok {
		return
	}
	defer release()
	alias, ok := g.cloudAlias(id)
	if !ok {
		out.Fail(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q is not configured on this gateway; name an alias after it or map it in model_aliases (its Anthropic id, e.g. claude-sonnet-4-5-20250929, is tried too)", id)})
		return
	}
	msgs, betas, err := providers.MessagesFromCloud(body, alias, stream)
	if err != nil {
		out.Fail(asAPIError(err))
		return
	}
	c := cloudCall(r, msgs, betas, endpoint)
	g.serve(r.Context(), &c, out)
}

// serveVertexCount answers Vertex's count-tokens:rawPredict, whose body
// names the model.
func (g *Gateway) serveVertexCount(r *http.Request, out *httpDoor) {
	body, release, ok := g.readCloudBody(out)
	if !ok {
		return
	}
	defer release()
	info, err := providers.PeekRequest(body)
	if err != nil && info.Model == "" {
		out.Fail(asAPIError(err))
		return
	}
	alias, ok := g.cloudAlias(info.Model)
	if !ok {
		out.Fail(&providers.APIError{Status: http.StatusNotFound, Param: "model", Code: "model_not_found",
			Message: fmt.Sprintf("model %q is not configured on this gateway; name an alias after it or map it in model_aliases", info.Model)})
		return
	}
	msgs, betas, err := providers.MessagesFromCloud(body, alias, nil)
	if err != nil {
		out.Fail(asAPIError(err))
		return
	}
	c := cloudCall(r, msgs, betas, ledger.EndpointVertexRawPredict)
	g.count(r.Context(), &c, out)
}

// readCloudBody reads an envelope's body as every client body is read
// (readBody): a Content-Encoding of gzip, deflate or zstd decoded,
// max_request_body bounding the wire and the decoded size, the buffer
// counted in the body memory until release, which the caller defers.
func (g *Gateway) readCloudBody(out cloudDoor) ([]byte, func(), bool) {
	req := &clientRequest{buf: g.bodyPool.Get().(*[]byte)}
	if apiErr := out.door().readBody(g, req); apiErr != nil {
		g.releaseRequest(req)
		out.Fail(apiErr)
		return nil, nil, false
	}
	return req.body, func() { g.releaseRequest(req) }, true
}

// cloudCall is the Messages call a cloud envelope r carries: body, the
// betas as anthropic-beta (which every Anthropic-family route reads:
// passed to Anthropic, put back in Bedrock's body, kept for Vertex),
// Anthropic's API version, and the ledger endpoint. The envelope's query
// is the cloud's, not for Anthropic.
func cloudCall(r *http.Request, body []byte, betas []string, endpoint ledger.Endpoint) Call {
	c := callOf(r, providers.FormatAnthropic)
	c.Endpoint, c.Body = endpoint, body
	c.Model, c.Action = "", ""
	c.Client.Query = ""
	c.Client.AnthropicVersion = []string{"2023-06-01"}
	c.Client.AnthropicBeta = nil
	if len(betas) > 0 {
		c.Client.AnthropicBeta = []string{strings.Join(betas, ",")}
	}
	return c
}

// bedrockSink writes the answer of a Bedrock call in Bedrock's way: a
// success as it is (InvokeModel's body is the Messages response), a
// stream framed as an AWS event stream by the framer newFramer makes, an
// error as {"message":…} with the exception named in x-amzn-ErrorType
// (Converse's errors are in that shape already: its format's family).
type bedrockSink struct {
	httpDoor
	stream    bool
	newFramer func() *providers.BedrockStreamFramer
	converse  bool
	started   bool
	framer    *providers.BedrockStreamFramer
	out       bytes.Buffer
}

func newBedrockSink(w http.ResponseWriter, r *http.Request, cf providers.Format, stream bool, newFramer func() *providers.BedrockStreamFramer, converse bool) *bedrockSink {
	b := &bedrockSink{httpDoor: httpDoor{w: w, r: r, aud: cf, rc: *http.NewResponseController(w)},
		stream: stream, newFramer: newFramer, converse: converse}
	b.call = callOf(r, cf)
	b.call.source = &b.httpDoor
	return b
}

func (b *bedrockSink) Start(status int) {
	b.started = true
	if b.stream && status == http.StatusOK {
		h := b.w.Header()
		h.Del("Content-Length")
		h.Set("Content-Type", "application/vnd.amazon.eventstream")
		b.framer = b.newFramer()
	}
	b.w.WriteHeader(status)
}

func (b *bedrockSink) Write(p []byte) error {
	if b.framer == nil {
		_, err := b.w.Write(p)
		return err
	}
	b.out.Reset()
	if err := b.framer.Write(&b.out, p); err != nil {
		return err
	}
	_, err := b.w.Write(b.out.Bytes())
	return err
}

// Fail answers e in Bedrock's shape: {"message"} and x-amzn-ErrorType,
// with the message an Anthropic client would read (an upstream's own
// Anthropic error's, not the gateway's summary of it).
func (b *bedrockSink) Fail(e *apierror.Error) {
	if b.started {
		return
	}
	b.started = true
	if b.converse {
		e.Write(b.w, providers.FormatConverse)
		return
	}
	h := b.w.Header()
	if e.RetryAfter != "" {
		h.Set("Retry-After", e.RetryAfter)
	}
	if e.NoRetry {
		h.Set("X-Should-Retry", "false")
	}
	writeBedrockError(b.w, e.Status, providers.UpstreamError(e.Status, e.Body(providers.FormatAnthropic)).Message)
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
