package batch

// The providers' own batch APIs, as the gateway calls them for a batch
// passed through (passthrough.go): Anthropic's Message Batches and
// OpenAI's Files + Batch. Every call carries the deployment's header
// (its credential, never the client's) and goes to the deployment's base
// URL only: a results_url the provider names is not followed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// Upstream is where a passed-through batch runs: one provider account.
type Upstream struct {
	// Name identifies the upstream across instances: its API, base URL
	// and a fingerprint of its credential, never the credential.
	Name string
	// API is the provider's batch API: apiAnthropic or apiOpenAI.
	API string
	// BaseURL is the deployment's api_base: https://api.anthropic.com,
	// https://api.openai.com/v1.
	BaseURL string
	Client  *http.Client
	// Header carries the deployment's credential; cloned per call.
	Header http.Header
}

// providerBatch is a provider's batch as a poll sees it.
type providerBatch struct {
	ID     string
	Status string // processing_status, or OpenAI's status
	Ended  bool
	Counts ledger.BatchCounts
	// OpenAI's result files, once ended.
	OutputFileID, ErrorFileID string
}

// providerResult is one request's end at the provider: its state
// (ledger.ItemSucceeded, …), the HTTP status it had and its body
// (the answer, or an error body of the batch's API).
type providerResult struct {
	CustomID string
	State    string
	Status   int
	Body     json.RawMessage
}

// maxResultLine bounds one line of a provider's results: a whole answer
// is far smaller (the gateway keeps at most 16 MiB of one).
const maxResultLine = 16 << 20

// providerTimeout bounds one call to a provider's batch API.
const providerTimeout = 2 * time.Minute

// call sends one request to up and returns its answer's body, or an
// error naming the provider's status and message.
func (up Upstream) call(ctx context.Context, method, path, contentType string, body io.Reader) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(ctx, providerTimeout)
	req, err := http.NewRequestWithContext(ctx, method, up.BaseURL+path, body)
	if err != nil {
		cancel()
		if c, ok := body.(io.Closer); ok {
			_ = c.Close() // a streamed body's writer waits for a reader
		}
		return nil, err
	}
	req.Header = up.Header.Clone()
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	client := up.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("%s %s: %w", method, path, err)
	}
	resp.Body = cancelOnClose{resp.Body, cancel}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return nil, &providerError{Status: resp.StatusCode, Message: providerMessage(msg)}
	}
	return resp, nil
}

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// callJSON is call for a JSON answer, at most 1 MiB.
func (up Upstream) callJSON(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	var in io.Reader
	ct := ""
	if body != nil {
		in, ct = bytes.NewReader(body), "application/json"
	}
	resp, err := up.call(ctx, method, path, ct, in)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

// providerError is a provider's refusal of a batch call.
type providerError struct {
	Status  int
	Message string
}

func (e *providerError) Error() string {
	return fmt.Sprintf("the provider answered %d: %s", e.Status, e.Message)
}

// providerMessage is the message of an error body in either family,
// bounded; the body's start when it has none.
func providerMessage(body []byte) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg = e.Error.Message
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return strings.ToValidUTF8(msg, "?")
}

// readLines calls fn with each non-blank line of r, each at most
// maxResultLine bytes.
func readLines(r io.Reader, fn func([]byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxResultLine)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("a results line is longer than %d bytes", maxResultLine)
	}
	return sc.Err()
}

// providerOf is the client of api's batch API.
func providerOf(api string) provider {
	if api == apiAnthropic {
		return anthropicProvider{}
	}
	return openAIProvider{}
}

// provider is one provider's batch API.
type provider interface {
	// create submits the batch's requests (custom ids and bodies as the
	// provider takes them) served as endpoint; it returns the
	// provider's batch id and, for OpenAI, its input file's id.
	create(ctx context.Context, up Upstream, endpoint string, ids []string, bodies [][]byte) (batchID, fileID string, err error)
	get(ctx context.Context, up Upstream, id string) (providerBatch, error)
	cancel(ctx context.Context, up Upstream, id string) error
	// results calls fn with each request's end, once the batch ended.
	results(ctx context.Context, up Upstream, b providerBatch, fn func(providerResult) error) error
	// forget deletes what the provider keeps of an ended batch (its
	// batch, its files), once the gateway keeps the results.
	forget(ctx context.Context, up Upstream, b providerBatch, inputFileID string) error
}

// withModel is body with its top-level model set to model: a provider's
// answer names the upstream model, the client sees its alias. A body
// that is not an object is kept as it is.
func withModel(body json.RawMessage, model string) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return body
	}
	if _, ok := m["model"]; !ok {
		return body
	}
	name, _ := json.Marshal(model)
	m["model"] = name
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}

// answerUsage is the usage of an answer body of endpoint, read as the
// interactive path reads the same answer (providers' usage readers):
// cache writes by TTL, cached tokens apart from the input.
func answerUsage(endpoint string, body json.RawMessage) providers.Usage {
	switch endpoint {
	case "/v1/messages":
		return providers.AnthropicUsageFromBody(body)
	case "/v1/responses":
		return providers.ResponsesUsageFromBody(body)
	}
	// Chat completions and embeddings.
	return providers.OpenAIUsageFromBody(body)
}

// streamed is a body write produces as it is read: the write runs
// beside the reader, and its error ends the read. The transport closes
// it when the call ends, which ends a write the call did not read to its
// end.
func streamed(write func(io.Writer) error) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(write(pw)) }()
	return pr
}
