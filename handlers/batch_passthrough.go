package handlers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/batch"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// batchPassthrough is the gateway's side of a batch passed through to a
// provider's batch API (batch.Passthrough): which upstream a batch's
// requests go to, their admission as requests of the gateway, the
// upstreams' credentials and the budgets' holds.
type batchPassthrough struct {
	g *Gateway
	// price is the fraction of the list price a provider's batch costs.
	price float64
	// upstreams are the deployments able to take a batch, by the name
	// batch.Upstream carries.
	upstreams map[string]*upstream.Deployment
}

func newBatchPassthrough(g *Gateway, price float64) *batchPassthrough {
	if price <= 0 {
		price = batch.DefaultProviderPrice
	}
	p := &batchPassthrough{g: g, price: price, upstreams: map[string]*upstream.Deployment{}}
	for _, d := range g.byID {
		if api := batchAPI(d.Entry()); api != "" {
			p.upstreams[upstreamName(api, d)] = d
		}
	}
	return p
}

// batchAPI is the provider batch API entry e can take batches on, "" for
// none: Anthropic's for anthropic/ and OpenAI's for openai/ at the
// provider's own address (not a compatible server at another api_base:
// vLLM, LM Studio, llama.cpp and most proxies have none), at any address
// with batch: provider; never with batch: gateway or a seat's own
// credential (passthrough_auth), which the gateway does not hold.
func batchAPI(e *modellist.Deployment) string {
	if e.Batch == modellist.BatchGateway || e.PassthroughAuth {
		return ""
	}
	api, home := "", ""
	switch {
	case e.Kind == modellist.KindAnthropic:
		api, home = "anthropic", "https://api.anthropic.com"
	case e.Kind == modellist.KindOpenAI && e.Provider == "openai":
		api, home = "openai", "https://api.openai.com/v1"
	}
	if e.Batch != modellist.BatchProvider && !strings.EqualFold(strings.TrimRight(e.APIBase, "/"), home) {
		return ""
	}
	return api
}

// upstreamName names d's upstream for every instance: its API, base URL
// and a fingerprint of the header it sends (its credential), never the
// credential itself.
func upstreamName(api string, d *upstream.Deployment) string {
	h := d.Header()
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	sum := sha256.New()
	for _, k := range keys {
		sum.Write([]byte(k + ":" + strings.Join(h[k], ",") + "\n"))
	}
	return api + " " + d.Entry().APIBase + " " + hex.EncodeToString(sum.Sum(nil)[:12])
}

func (p *batchPassthrough) Upstream(name string) (batch.Upstream, bool) {
	d, ok := p.upstreams[name]
	if !ok {
		return batch.Upstream{}, false
	}
	api, _, _ := strings.Cut(name, " ")
	return batch.Upstream{Name: name, API: api, BaseURL: d.Entry().APIBase, Client: d.Client(), Header: d.Header()}, true
}

// upstreamOf is the one upstream every deployment of alias reaches with
// one model, and its name; nil when they differ or one has no batch API.
func (p *batchPassthrough) upstreamOf(alias string) (*upstream.Deployment, string) {
	deps := p.g.backends[alias]
	if len(deps) == 0 {
		return nil, ""
	}
	api := batchAPI(deps[0].Entry())
	if api == "" {
		return nil, ""
	}
	name := upstreamName(api, deps[0])
	for _, d := range deps[1:] {
		if batchAPI(d.Entry()) != api || upstreamName(api, d) != name || d.Entry().Model != deps[0].Entry().Model {
			return nil, ""
		}
	}
	return deps[0], name
}

// Plan passes a batch through when every request's alias reaches one
// upstream whose batch API serves the batch's endpoint, and admits each
// request as the gateway admits one (its format, its model for this key,
// the secret firewall).
func (p *batchPassthrough) Plan(ctx context.Context, id *policy.Identity, endpoint string, reqs []batch.Request) (*batch.Plan, *apierror.Error) {
	g := p.g
	cf, ok := batchFormats[endpoint]
	if !ok {
		return nil, nil
	}
	want := "openai"
	if cf == providers.FormatAnthropic {
		want = "anthropic"
	}
	deps := make([]*upstream.Deployment, len(reqs))
	var name string
	for i, q := range reqs {
		alias, ok := g.models.Resolve(q.Model)
		if !ok {
			return nil, nil
		}
		d, n := p.upstreamOf(alias)
		if d == nil || (name != "" && n != name) || !strings.HasPrefix(n, want+" ") {
			return nil, nil
		}
		// The request goes as the provider's API takes it: embeddings to
		// an upstream that serves them, Responses to one that takes them
		// natively (not translated to chat completions).
		if (cf == providers.FormatEmbeddings && !d.Embeddings()) || (cf == providers.FormatResponses && !d.Entry().ResponsesNative) {
			return nil, nil
		}
		deps[i], name = d, n
	}
	up, _ := p.Upstream(name)
	plan := &batch.Plan{Upstream: up, Bodies: make([][]byte, len(reqs)), Aliases: make([]string, len(reqs)), Models: map[string]batch.PlanModel{}}
	for i, q := range reqs {
		body, alias, pico, e := p.admit(ctx, id, cf, deps[i], q.Body)
		if e != nil {
			e.Message = "request " + strconv.Itoa(i) + " (custom_id " + batch.ShownID(q.CustomID) + "): " + e.Message
			return nil, e
		}
		plan.Bodies[i], plan.Aliases[i] = body, alias
		plan.WorstPico = min(plan.WorstPico+pico, math.MaxInt64/2)
		if _, ok := plan.Models[alias]; !ok {
			e := deps[i].Entry()
			plan.Models[alias] = batch.PlanModel{Model: e.Model, Provider: e.Provider, Prices: p.batchPrices(deps[i].Prices())}
		}
	}
	return plan, nil
}

// admit reads one request as the core reads a request (readRequest:
// format, model, key, firewall), bounds its output as a budgeted request
// is bounded, and translates it for d. It returns the body d's provider
// gets, its alias and its worst case at the batch price.
func (p *batchPassthrough) admit(ctx context.Context, id *policy.Identity, cf providers.Format, d *upstream.Deployment, body []byte) ([]byte, string, int64, *apierror.Error) {
	g := p.g
	c := Call{Format: cf, Endpoint: ledger.EndpointBatch, Identity: id, Body: body}
	if cf == providers.FormatAnthropic {
		c.Client.AnthropicVersion = []string{"2023-06-01"}
	}
	out := newBufferSink()
	req, ok := g.readRequest(ctx, &c, out)
	if !ok {
		e := out.failed
		if e == nil {
			e = &apierror.Error{Status: http.StatusBadRequest, Message: "the request was refused"}
		}
		return nil, "", 0, e
	}
	defer g.releaseRequest(req)
	body, info, alias := req.body, req.info, req.alias
	est := g.estimate(alias, body, info)
	if info.OutputLimit() == 0 && est.budget.Tokens > 0 {
		// As the core bounds a budgeted request without one: the
		// provider is held to what the hold assumed.
		var err error
		if body, info, err = info.WithOutputLimit(body, est.budget.Tokens, cf.BoundMember()); err != nil {
			return nil, "", 0, &apierror.Error{Status: http.StatusBadRequest, Message: "could not be given an output bound: " + err.Error()}
		}
	}
	sent, _, err := d.Body(cf, body, info)
	if err != nil {
		return nil, "", 0, asAPIError(err)
	}
	// The batch price is of tokens: server tools' fees are held whole.
	pico := int64(float64(est.budget.Pico()-est.fees)*p.price) + est.fees
	return slices.Clone(sent), alias, pico, nil
}

// batchPrices are list prices at the batch price.
func (p *batchPassthrough) batchPrices(l ledger.Prices) ledger.Prices {
	f := func(v int64) int64 { return int64(math.Round(float64(v) * p.price)) }
	return ledger.Prices{Input: f(l.Input), Output: f(l.Output), CacheRead: f(l.CacheRead), CacheWrite5m: f(l.CacheWrite5m), CacheWrite1h: f(l.CacheWrite1h)}
}

func (p *batchPassthrough) Hold(ctx context.Context, id *policy.Identity, ticket uint64, pico int64, expires time.Time) *apierror.Error {
	if id == nil {
		return nil
	}
	return p.g.opts.Budgets.HoldBatch(ctx, id, p.g.opts.Controls.WorkspaceLimits(id.Workspace), ticket, pico, expires)
}

func (p *batchPassthrough) Restore(id *policy.Identity, ticket uint64, pico int64) {
	if id == nil {
		return
	}
	p.g.opts.Budgets.RestoreBatchHold(id, p.g.opts.Controls.WorkspaceLimits(id.Workspace), ticket, pico)
}

func (p *batchPassthrough) Release(ctx context.Context, ticket uint64) {
	p.g.opts.Budgets.ReleaseBatchHold(ctx, ticket)
}
