package batch

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
)

// settle ends a passed-through batch whose provider batch ended, on one
// instance only (a lease, then a transaction that settles once): each
// request's answer from the provider's results, translated back (the
// alias as the model), one ledger record per request that ran, at the
// batch price, the gateway's own result files, and the hold ended. True
// when this call settled it.
func (s *Service) settle(ctx context.Context, ps ledger.BatchPassthroughStore, b ledger.Batch, p ledger.BatchPassthrough, up Upstream, prov provider, pb providerBatch) bool {
	now := s.o.Now()
	leased, err := ps.LeasePassthrough(ctx, b.ID, s.owner, now, now.Add(settleLease))
	if err != nil || !leased {
		if err != nil {
			s.o.Failed("leasing a passed-through batch's settlement", err)
		}
		return false
	}
	st := ledger.BatchStore(ps.(ledger.BatchStore))
	items, err := st.BatchItems(ctx, b.ID)
	if err != nil {
		s.o.Failed("reading a passed-through batch's requests", err)
		return false
	}
	var kept storedModels
	_ = json.Unmarshal(p.Models, &kept)
	models := kept.Models
	byID := make(map[string]int, len(items))
	for i, it := range items {
		byID[it.CustomID] = i
	}
	results := make([]*providerResult, len(items))
	err = prov.results(ctx, up, pb, func(r providerResult) error {
		if i, ok := byID[r.CustomID]; ok && results[i] == nil {
			results[i] = &r
		}
		return nil
	})
	if err != nil {
		s.o.Failed("reading a passed-through batch's results at its provider", err)
		return false
	}
	now = s.o.Now().UTC()
	ident := s.spender(b.KeyID, kept.Admitted)
	ended := make([]ledger.BatchItem, len(items))
	var recs []ledger.Record
	for i, it := range items {
		alias := ""
		if it.Seq >= 0 && it.Seq < int64(len(kept.Aliases)) {
			alias = kept.Aliases[it.Seq]
		}
		r := results[i]
		ran := r != nil
		if r == nil {
			// Not in the provider's results: it never ran.
			r = &providerResult{State: ledger.ItemExpired}
			switch {
			case !b.Cancelled.IsZero():
				r.State = ledger.ItemCanceled
			case pb.Status == "failed":
				// OpenAI refused the batch as a whole (its validation).
				r = &providerResult{State: ledger.ItemErrored, Status: http.StatusBadGateway,
					Body: (&apierror.Error{Status: http.StatusBadGateway, Message: "the provider failed the batch without running this request"}).Body(familyOf(b.Endpoint))}
			}
		}
		e := ledger.BatchItem{ID: it.ID, CustomID: it.CustomID, Seq: it.Seq, State: r.State, StatusCode: r.Status}
		if r.Body != nil {
			e.Result = r.Body
			if r.State == ledger.ItemSucceeded {
				e.Result = withModel(r.Body, alias)
				if s.o.ScreenAnswer != nil {
					e.Result = s.o.ScreenAnswer(ident, alias, b.Endpoint, e.Result)
				}
			}
		}
		e = storableItem(e, b.Endpoint)
		ended[i] = e
		if !ran || (r.State != ledger.ItemSucceeded && r.State != ledger.ItemErrored) {
			continue
		}
		m := models[alias]
		rec := ledger.Record{Time: now, RequestID: it.ID, KeyID: b.KeyID, Alias: alias, UpstreamModel: m.Model, Provider: m.Provider,
			ServiceTier: "batch", Endpoint: ledger.EndpointBatch, Status: r.Status, Outcome: ledger.OutcomeOK}
		if r.State == ledger.ItemErrored {
			rec.Outcome = ledger.OutcomeError
		}
		if ident != nil {
			rec.Workspace, rec.Person, rec.Groups = ident.Workspace, ident.PersonID(), ident.Groups
		}
		u := answerUsage(b.Endpoint, r.Body)
		rec.InputTokens, rec.OutputTokens, rec.CacheReadTokens = ledger.ClampTokens(u.InputTokens), ledger.ClampTokens(u.OutputTokens), ledger.ClampTokens(u.CacheReadTokens)
		rec.CacheCreation5m, rec.CacheCreation1h = ledger.ClampTokens(u.CacheCreation5m), ledger.ClampTokens(u.CacheCreation1h)
		m.Prices.Apply(&rec)
		ledger.ChargeWebSearches(&rec, u.WebSearches)
		recs = append(recs, rec)
	}
	if len(recs) > 0 {
		// The first record ends the batch's shared reservation in the
		// settlement's transaction.
		recs[0].Ticket = p.HoldTicket
	} else {
		recs = nil
	}
	b.Ended = now
	files := s.resultFiles(b, ended, now)
	settled, err := ps.SettlePassthrough(ctx, b.ID, s.owner, ended, recs, files, now)
	if err != nil {
		s.o.Failed("settling a passed-through batch", err)
		return false
	}
	if !settled {
		return false
	}
	if len(recs) == 0 {
		_ = ps.DropHold(ctx, p.HoldTicket)
	}
	s.o.Passthrough.Release(ctx, p.HoldTicket)
	// The gateway keeps the results now: the provider's copies go
	// (best effort; the provider's own retention ends them otherwise).
	if err := prov.forget(ctx, up, pb, p.ProviderFileID); err != nil {
		s.o.Failed("deleting a settled batch's copies at its provider", err)
	}
	return true
}

// storableItem is an ended item as the database keeps it (storable).
func storableItem(it ledger.BatchItem, endpoint string) ledger.BatchItem {
	if it.Result == nil {
		return it
	}
	a := storable(Answer{Status: it.StatusCode, Body: it.Result}, endpoint)
	if a.Status != it.StatusCode {
		it.State = ledger.ItemErrored
	}
	it.StatusCode, it.Result = a.Status, a.Body
	return it
}

// storedModels is what a passed-through batch keeps of its plan: its
// aliases' upstream models and prices, and each request's alias by its
// place in the batch.
type storedModels struct {
	Models  map[string]PlanModel `json:"models"`
	Aliases []string             `json:"aliases"`
	// Admitted is whom the batch was admitted as (nil in a batch stored
	// before it was kept).
	Admitted *admittedAs `json:"admitted,omitempty"`
}
