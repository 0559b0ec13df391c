package handlers

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/batch"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// maxItemAnswer bounds one batch item's answer kept for its results: a
// whole (never streamed) answer is far smaller.
const maxItemAnswer = 16 << 20

// newBatches builds the batch APIs' service over this gateway's own
// request path; nil without a ledger (Responses).
func (g *Gateway) newBatches() *batch.Service {
	if g.opts.Responses == nil {
		return nil
	}
	o := g.opts.Batches
	o.Store = func() ledger.BatchStore {
		bs, _ := g.rstate.OpenStore().(ledger.BatchStore)
		return bs
	}
	o.Runner = g
	o.Memory = &batchMemory{g: g}
	o.Screen, o.ScreenID, o.ScreenAnswer = g.screenBatchInput, g.screenBatchID, g.screenBatchAnswer
	o.Identify = func(keyID string) (*policy.Identity, *apierror.Error) {
		// Without a key registry (a gateway built without the app, in
		// tests) the key is taken as it is named, with no limits.
		return &policy.Identity{KeyID: keyID, Role: policy.RoleUser}, nil
	}
	o.Site = g.opts.Site
	if c := g.opts.Controls; c != nil {
		o.Identify = func(keyID string) (*policy.Identity, *apierror.Error) { return c.IdentifyID(o.Site, keyID) }
	}
	// As readRequest resolves a model: an alias, or a name model_aliases
	// maps to one.
	o.Allows = func(id *policy.Identity, model string) bool {
		alias, ok := g.models.Resolve(model)
		return ok && (id == nil || id.Allows(alias))
	}
	o.Passthrough = newBatchPassthrough(g, o.ProviderPrice)
	s := batch.New(o)
	s.Start()
	return s
}

// batchMemory counts a batch's bytes (an input read and stored, a file
// or results sent back) against the gateway's body memory
// (max_body_memory), as a request's body is, but takes at most half of
// it: a slowly trickled upload, or several, must leave the other half to
// the requests of every other client.
type batchMemory struct {
	g    *Gateway
	mu   sync.Mutex
	held int64
}

func (m *batchMemory) Acquire(ctx context.Context, n int64) bool {
	m.mu.Lock()
	if m.held+n > m.Max() {
		m.mu.Unlock()
		return false
	}
	m.held += n
	m.mu.Unlock()
	if m.g.bodyMem.acquire(ctx, n, m.g.now().Add(m.g.opts.BodyMemoryWait)) {
		return true
	}
	m.give(n)
	return false
}

func (m *batchMemory) Release(n int64) {
	m.g.bodyMem.release(n)
	m.give(n)
}

func (m *batchMemory) give(n int64) {
	m.mu.Lock()
	m.held -= n
	m.mu.Unlock()
}

// Max is the batches' share of the body memory.
func (m *batchMemory) Max() int64 { return m.g.bodyMem.max / 2 }

// defaultBodyMemory is max_body_memory's default: 8 × max_request_body,
// whether or not batches are served. Raising it so that half holds a
// max_bytes batch input would let a flood of ordinary bodies hold that
// much too (TestConcurrentGzipBombsBoundedMemory), so an operator who
// wants inputs that large raises max_body_memory knowingly.
func defaultBodyMemory(o GatewayOptions) int64 {
	return 8 * o.MaxRequestBody
}

// batchFormats are the paths a batch item may name and the client format
// each is read in.
var batchFormats = map[string]providers.Format{
	"/v1/messages":         providers.FormatAnthropic,
	"/v1/chat/completions": providers.FormatOpenAI,
	"/v1/embeddings":       providers.FormatEmbeddings,
	"/v1/responses":        providers.FormatResponses,
}

// RunItem serves one batch item as a call of the core, as a request of
// key id would be served (budgets, rate limits, the alias's chain),
// recorded in the ledger with the endpoint "batch". It is the batch.Runner
// the worker calls.
func (g *Gateway) RunItem(ctx context.Context, id *policy.Identity, path string, body []byte) batch.Answer {
	cf, ok := batchFormats[path]
	if !ok {
		return batch.Answer{Status: http.StatusNotFound, Body: (&apierror.Error{Status: http.StatusNotFound,
			Message: "no endpoint " + path + " for batch items"}).Body(apierror.OpenAI)}
	}
	c := Call{Format: cf, Endpoint: ledger.EndpointBatch, Identity: id, Body: body}
	if cf == providers.FormatAnthropic {
		c.Client.AnthropicVersion = []string{"2023-06-01"}
	}
	out := &itemSink{bufferSink: *newBufferSink()}
	g.Serve(ctx, &c, out)
	if out.status == 0 {
		out.status = http.StatusOK
	}
	ans := batch.Answer{Status: out.status, Body: out.body.Bytes()}
	if e := out.failed; e != nil {
		ans.Body = e.Body(cf)
		ans.Final = e.NoRetry
		if s, err := strconv.Atoi(e.RetryAfter); err == nil && s > 0 {
			ans.RetryAfter = time.Duration(s) * time.Second
		}
	} else {
		// An upstream's own refusal, relayed with its headers.
		ans.Final = out.header.Get("X-Should-Retry") == "false"
		if s, err := strconv.Atoi(out.header.Get("Retry-After")); err == nil && s > 0 {
			ans.RetryAfter = time.Duration(s) * time.Second
		}
	}
	if out.over {
		ans.Status, ans.Body = http.StatusBadGateway, (&apierror.Error{Status: http.StatusBadGateway,
			Message: "the answer exceeds the " + strconv.Itoa(maxItemAnswer) + " bytes a batch result may hold"}).Body(cf)
	}
	return ans
}

// itemSink keeps a batch item's whole answer, up to maxItemAnswer.
type itemSink struct {
	bufferSink
	over bool
}

func (s *itemSink) Write(p []byte) error {
	if s.body.Len()+len(p) > maxItemAnswer {
		s.over = true
		return nil
	}
	return s.bufferSink.Write(p)
}
