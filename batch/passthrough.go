package batch

// Pass-through: a batch whose every request goes to one upstream with a
// batch API of its own (Anthropic Message Batches, OpenAI Batch) is sent
// there as one batch, at the provider's batch price, with the
// gateway's guarantees kept around it: its requests are admitted as the
// gateway admits any (the key's models, the secret firewall), its whole
// worst case is held against every budget of the caller before the
// provider sees it, and once the provider's batch ended one instance
// settles it: one ledger record per request from the provider's usage,
// the hold released, the results kept as the gateway's own. The client
// sees the same API either way (docs/batches.md).

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// Passthrough is what the gateway lends the batch service to pass
// batches through: the routing and admission of its requests, the
// upstreams' credentials and the budgets.
type Passthrough interface {
	// Plan is how the batch's requests would go to a provider's batch
	// API: nil when they would not (mixed upstreams, a local backend, a
	// deployment with batch: gateway), or the refusal of a request the
	// gateway refuses (a secret the firewall blocks).
	Plan(ctx context.Context, id *policy.Identity, endpoint string, reqs []Request) (*Plan, *apierror.Error)
	// Upstream is the upstream named name in this configuration.
	Upstream(name string) (Upstream, bool)
	// Hold reserves the batch's worst case against every budget of id
	// until expires, under ticket, or refuses it.
	Hold(ctx context.Context, id *policy.Identity, ticket uint64, pico int64, expires time.Time) *apierror.Error
	// Restore counts an open batch's hold again after a restart, where
	// holds live in memory.
	Restore(id *policy.Identity, ticket uint64, pico int64)
	// Release ends the hold of ticket once its batch settled or was
	// never stored.
	Release(ctx context.Context, ticket uint64)
}

// Plan is a batch as it goes to its provider.
type Plan struct {
	Upstream Upstream
	// Bodies are the requests as the provider gets them: the upstream's
	// model, the firewall's redactions, an output bound.
	Bodies [][]byte
	// Aliases are each request's alias, as the client named it.
	Aliases []string
	// Models are the batch's aliases with their upstream models and
	// batch prices.
	Models map[string]PlanModel
	// WorstPico is the whole batch's worst case at the batch price.
	WorstPico int64
}

// PlanModel is an alias of a passed-through batch.
type PlanModel struct {
	Model    string        `json:"model"`
	Provider string        `json:"provider"`
	Prices   ledger.Prices `json:"prices"`
}

// The pass-through's clock.
const (
	// holdMargin outlives the provider's 24 hours: a batch ends by then,
	// and its settlement may follow a little later.
	holdMargin = 2 * time.Hour
	// pollCache is Options.PollCache's default.
	pollCache = time.Second
	// checkEvery is Options.CheckEvery's default.
	checkEvery = 30 * time.Second
	// pollWait bounds a poll of the provider.
	pollWait = 10 * time.Second
	// settleLease bounds one instance's settlement of a batch.
	settleLease = 5 * time.Minute
)

// passthroughStore is st's pass-through part, when the store has one.
func passthroughStore(st ledger.BatchStore) (ledger.BatchPassthroughStore, bool) {
	ps, ok := st.(ledger.BatchPassthroughStore)
	return ps, ok
}

// tryPassthrough sends b to its provider when its requests all go to one
// upstream with a batch API. handled false: the gateway runs it. Handled
// with ok false: the refusal is written.
func (s *Service) tryPassthrough(w http.ResponseWriter, r *http.Request, st ledger.BatchStore, f apierror.Family, ident *policy.Identity, b ledger.Batch, reqs []Request) (ledger.Batch, bool, bool) {
	pt := s.o.Passthrough
	ps, ok := passthroughStore(st)
	if pt == nil || !ok {
		return b, false, false
	}
	ctx := r.Context()
	plan, e := pt.Plan(ctx, ident, b.Endpoint, reqs)
	if e == nil && plan == nil {
		return b, false, false
	}
	refuse := func(e *apierror.Error) (ledger.Batch, bool, bool) {
		e.Write(w, f)
		return b, true, false
	}
	if e != nil {
		return refuse(e)
	}
	now := s.o.Now().UTC()
	b.Created, b.Expires = now, now.Add(completionWindow)
	ticket := newTicket()
	if e := pt.Hold(ctx, ident, ticket, plan.WorstPico, b.Expires.Add(holdMargin)); e != nil {
		return refuse(e)
	}
	drop := func() {
		cctx, cancel := context.WithTimeout(context.Background(), storeBudget)
		defer cancel()
		_ = ps.DropHold(cctx, ticket)
		pt.Release(cctx, ticket)
	}
	ids := make([]string, len(reqs))
	for i, q := range reqs {
		ids[i] = q.CustomID
	}
	prov := providerOf(plan.Upstream.API)
	pid, fid, err := prov.create(ctx, plan.Upstream, b.Endpoint, ids, plan.Bodies)
	if err != nil {
		drop()
		s.o.Failed("creating a batch at its provider", err)
		return refuse(providerRefusal(err, "creating the batch"))
	}
	models, _ := json.Marshal(storedModels{Models: plan.Models, Aliases: plan.Aliases, Admitted: admittedOf(ident)})
	items := make([]ledger.BatchItem, len(reqs))
	for i, q := range reqs {
		items[i] = ledger.BatchItem{ID: "batch_req_" + randomID(12), Seq: int64(i), CustomID: q.CustomID, Body: plan.Bodies[i]}
	}
	row := ledger.BatchPassthrough{BatchID: b.ID, Site: b.Site, KeyID: b.KeyID, Provider: plan.Upstream.API, Upstream: plan.Upstream.Name,
		ProviderBatchID: pid, ProviderFileID: fid, Models: models, HoldTicket: ticket, HoldPico: plan.WorstPico,
		Status: "in_progress", Counts: countsJSON(ledger.BatchCounts{Running: int64(len(reqs))}), Polled: now}
	// The provider has it: it is stored whether or not the client still
	// waits for the answer.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), storeBudget)
	defer cancel()
	if err := ps.CreatePassthroughBatch(sctx, b, items, row); err != nil {
		// Nothing of it is stored: the provider's batch is cancelled
		// rather than left to run unrecorded.
		cctx, cancel := context.WithTimeout(context.Background(), providerTimeout)
		_ = prov.cancel(cctx, plan.Upstream, pid)
		cancel()
		drop()
		return refuse(storeError(err, "batch", b.ID))
	}
	b.Counts.Running, b.Total = int64(len(items)), int64(len(items))
	return b, true, true
}

// providerRefusal is a provider's refusal as the caller sees it: its
// own 4xx (a request the provider finds invalid) as a 400 naming it,
// anything else a 502.
func providerRefusal(err error, doing string) *apierror.Error {
	if pe, ok := err.(*providerError); ok && pe.Status >= 400 && pe.Status < 500 && pe.Status != http.StatusUnauthorized && pe.Status != http.StatusForbidden && pe.Status != http.StatusTooManyRequests {
		// The provider found a request invalid: the caller's to fix.
		return &apierror.Error{Status: http.StatusBadRequest, Message: "the provider refused the batch: " + pe.Message}
	}
	pe, ok := err.(*providerError)
	if !ok {
		// A transport error names the upstream's address: the caller
		// learns only that it failed.
		return &apierror.Error{Status: http.StatusBadGateway, RetryAfter: "30", Message: "the provider's batch API could not be reached " + doing + "; retry"}
	}
	e := &apierror.Error{Status: http.StatusBadGateway, Message: "the provider's batch API failed " + doing + ": " + pe.Error()}
	if pe.Status == http.StatusTooManyRequests || pe.Status >= 500 {
		e.Status, e.RetryAfter = http.StatusServiceUnavailable, "30"
	}
	return e
}

func newTicket() uint64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	// Positive as a BIGINT, never 0 (no reservation).
	return binary.BigEndian.Uint64(b[:])>>1 | 1
}

func countsJSON(c ledger.BatchCounts) json.RawMessage {
	out, _ := json.Marshal(c)
	return out
}

// viewPassthrough is b as its provider has it: a batch the gateway runs
// is returned as it is; a passed-through one not settled is polled
// (at most every PollCache), its counts the provider's, and settled once
// the provider's batch ended.
func (s *Service) viewPassthrough(ctx context.Context, st ledger.BatchStore, b ledger.Batch, poll bool) ledger.Batch {
	ps, ok := passthroughStore(st)
	if !ok || !b.Ended.IsZero() {
		return b
	}
	p, err := ps.GetPassthrough(ctx, b.ID)
	if err != nil || !p.Settled.IsZero() {
		return b
	}
	if poll && s.o.Now().Sub(p.Polled) >= s.o.PollCache {
		if ended := s.poll(ctx, ps, b, &p); ended {
			if nb, err := st.GetBatch(ctx, b.Owner(), b.ID); err == nil {
				return nb
			}
		}
	}
	var c ledger.BatchCounts
	if json.Unmarshal(p.Counts, &c) == nil {
		b.Counts = c
	}
	return b
}

// poll asks the provider for p's batch, keeps what it saw and settles the
// batch once it ended; true when it is settled now.
func (s *Service) poll(ctx context.Context, ps ledger.BatchPassthroughStore, b ledger.Batch, p *ledger.BatchPassthrough) bool {
	up, ok := s.o.Passthrough.Upstream(p.Upstream)
	if !ok {
		s.o.Failed("polling a passed-through batch", errNoUpstream(p))
		return false
	}
	prov := providerOf(p.Provider)
	// A slow provider delays the poll by pollWait at most; the client then
	// sees the counts of the last poll.
	gctx, cancel := context.WithTimeout(ctx, pollWait)
	pb, err := prov.get(gctx, up, p.ProviderBatchID)
	cancel()
	if err != nil {
		s.o.Failed("polling a passed-through batch at its provider", err)
		return false
	}
	now := s.o.Now()
	p.Status, p.Counts, p.Polled = pb.Status, countsJSON(pb.Counts), now
	if err := ps.NotePassthrough(ctx, p.BatchID, pb.Status, p.Counts, now); err != nil {
		s.o.Failed("storing a passed-through batch's poll", err)
	}
	if !pb.Ended {
		return false
	}
	// The settlement outlives a client that stops waiting for it.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleLease)
	defer cancel()
	return s.settle(sctx, ps, b, *p, up, prov, pb)
}

type upstreamMissing struct{ name string }

func (e upstreamMissing) Error() string {
	return "no deployment of this configuration reaches the upstream of a passed-through batch (" + e.name + "); it settles once one does"
}

func errNoUpstream(p *ledger.BatchPassthrough) error { return upstreamMissing{name: p.Upstream} }

// cancelAtProvider asks the provider to cancel b when it was passed
// through; nil for a batch the gateway runs.
func (s *Service) cancelAtProvider(ctx context.Context, st ledger.BatchStore, b ledger.Batch) *apierror.Error {
	ps, ok := passthroughStore(st)
	if !ok || s.o.Passthrough == nil || !b.Ended.IsZero() {
		return nil
	}
	p, err := ps.GetPassthrough(ctx, b.ID)
	if err != nil || !p.Settled.IsZero() {
		return nil
	}
	up, ok := s.o.Passthrough.Upstream(p.Upstream)
	if !ok {
		return &apierror.Error{Status: http.StatusServiceUnavailable, RetryAfter: "60", Message: errNoUpstream(&p).Error()}
	}
	if err := providerOf(p.Provider).cancel(ctx, up, p.ProviderBatchID); err != nil {
		return providerRefusal(err, "cancelling the batch")
	}
	return nil
}

// checkPassthroughs polls this site's open passed-through batches no
// client polled lately, so each settles without one; restore first
// counts their holds again after a start.
func (s *Service) checkPassthroughs(ctx context.Context, st ledger.BatchStore, restore bool) {
	ps, ok := passthroughStore(st)
	if !ok || s.o.Passthrough == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, storeBudget)
	open, err := ps.OpenPassthroughs(cctx, s.o.Site)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			s.o.Failed("reading open passed-through batches", err)
		}
		return
	}
	for _, p := range open {
		if restore {
			// As admitted, whatever the key is now (expired, inactive).
			var kept storedModels
			_ = json.Unmarshal(p.Models, &kept)
			if id := s.spender(p.KeyID, kept.Admitted); id != nil {
				s.o.Passthrough.Restore(id, p.HoldTicket, p.HoldPico)
			}
		}
		if s.o.Now().Sub(p.Polled) < s.o.CheckEvery {
			continue
		}
		b, err := st.GetBatch(ctx, ledger.BatchOwner{Site: p.Site, KeyID: p.KeyID}, p.BatchID)
		if err == nil {
			s.viewPassthrough(ctx, st, b, true)
		}
	}
}
