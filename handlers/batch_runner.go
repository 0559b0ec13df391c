package handlers

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/batch"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
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
		bs, _ := g.responseStore().(ledger.BatchStore)
		return bs
	}
	o.Runner = g
	o.Identify = func(keyID string) (*policy.Identity, *apierror.Error) {
		// Without a key registry (a gateway built without the app, in
		// tests) the key is taken as it is named, with no limits.
		return &policy.Identity{KeyID: keyID, Role: policy.RoleUser}, nil
	}
	if c := g.opts.Controls; c != nil {
		o.Identify = c.IdentifyID
	}
	// As readRequest resolves a model: an alias, or a name model_aliases
	// maps to one.
	o.Allows = func(id *policy.Identity, model string) bool {
		alias, ok := g.models.Resolve(model)
		return ok && (id == nil || id.Allows(alias))
	}
	s := batch.New(o)
	s.Start()
	return s
}

// RunItem serves one batch item through the handler of its path, as a
// request of key id would be served (budgets, rate limits, the alias's
// chain), recorded in the ledger with the endpoint "batch". It is the
// batch.Runner the worker calls; with the transport-free core, it becomes
// one Call with a Sink that keeps the whole answer.
func (g *Gateway) RunItem(ctx context.Context, id *policy.Identity, path string, body []byte) batch.Answer {
	h, ok := g.paths[path]
	if !ok {
		return batch.Answer{Status: http.StatusNotFound, Body: (&apierror.Error{Status: http.StatusNotFound,
			Message: "no endpoint " + path + " for batch items"}).Body(apierror.OpenAI)}
	}
	ctx = context.WithValue(policy.WithIdentity(ctx, id), ingressEndpoint{}, ledger.EndpointBatch)
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://batch"+path, bytes.NewReader(body))
	if err != nil {
		return batch.Answer{Status: http.StatusInternalServerError}
	}
	r.Header.Set("Content-Type", "application/json")
	if path == "/v1/messages" {
		r.Header.Set("Anthropic-Version", "2023-06-01")
	}
	w := &itemWriter{header: http.Header{}}
	h(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	ans := batch.Answer{Status: w.status, Body: w.body.Bytes()}
	if w.over {
		ans.Status, ans.Body = http.StatusBadGateway, (&apierror.Error{Status: http.StatusBadGateway,
			Message: "the answer exceeds the " + strconv.Itoa(maxItemAnswer) + " bytes a batch result may hold"}).Body(ClientFormat(r))
	}
	ans.Final = w.header.Get("X-Should-Retry") == "false"
	if s, err := strconv.Atoi(w.header.Get("Retry-After")); err == nil && s > 0 {
		ans.RetryAfter = time.Duration(s) * time.Second
	}
	return ans
}

// itemWriter keeps a batch item's whole answer.
type itemWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
	over   bool
}

func (w *itemWriter) Header() http.Header { return w.header }

func (w *itemWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *itemWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if w.body.Len()+len(p) > maxItemAnswer {
		w.over = true
		return len(p), nil
	}
	return w.body.Write(p)
}

// Flush is a no-op: the answer is kept whole.
func (w *itemWriter) Flush() {}
