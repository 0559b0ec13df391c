package batch

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// idHandler serves a call on one resource, named by id.
type idHandler func(w http.ResponseWriter, r *http.Request, id string)

// routes are one resource's calls, each by method: on the collection
// (rest ""), on one id ("/{id}") and on one id's actions
// ("/{id}/{action}"). Anything else is a 404, a method a path does not
// take a 405, both in the API's family.
type routes struct {
	family     apierror.Family
	collection map[string]http.HandlerFunc
	item       map[string]idHandler
	actions    map[string]map[string]idHandler
}

func (rt routes) serve(w http.ResponseWriter, r *http.Request, rest string) {
	if rest == "" {
		if h, ok := rt.collection[r.Method]; ok {
			h(w, r)
			return
		}
		methodNotAllowed(w, r, rt.family, allowed(rt.collection))
		return
	}
	id, action, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	byMethod := rt.item
	if action != "" {
		byMethod = rt.actions[action]
	}
	if id == "" || strings.Contains(action, "/") || byMethod == nil {
		notFound(w, r, rt.family)
		return
	}
	if h, ok := byMethod[r.Method]; ok {
		h(w, r, id)
		return
	}
	methodNotAllowed(w, r, rt.family, allowed(byMethod))
}

func allowed[V any](m map[string]V) string {
	var ms []string
	for k := range m {
		ms = append(ms, k)
	}
	slices.Sort(ms)
	return strings.Join(ms, ", ")
}

// batchOf is the caller's batch id of api with its store, or false once
// the refusal (the ledger not open, no such batch for this key) is
// written. A batch of the other API is not found.
func (s *Service) batchOf(w http.ResponseWriter, r *http.Request, api, id string) (ledger.BatchStore, ledger.Batch, bool) {
	f := apierror.OpenAI
	what := "batch"
	if api == apiAnthropic {
		f, what = apierror.Anthropic, "message batch"
	}
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return nil, ledger.Batch{}, false
	}
	_, key := s.ownerOf(r)
	b, err := st.GetBatch(r.Context(), key, id)
	if err == nil && b.API != api {
		err = ledger.ErrBatchNotFound
	}
	if err != nil {
		storeError(err, what, id).Write(w, f)
		return nil, b, false
	}
	return st, s.viewPassthrough(r.Context(), st, b, true), true
}

// cancel asks batch id of api to stop and answers it as render shows it.
func (s *Service) cancel(w http.ResponseWriter, r *http.Request, api, id string, render func(ledger.Batch) json.RawMessage) {
	st, b, ok := s.batchOf(w, r, api, id)
	if !ok {
		return
	}
	f := apierror.OpenAI
	if api == apiAnthropic {
		f = apierror.Anthropic
	}
	if e := s.cancelAtProvider(r.Context(), st, b); e != nil {
		e.Write(w, f)
		return
	}
	b, err := st.CancelBatch(r.Context(), b.Owner(), id, s.o.Now())
	if err != nil {
		storeError(err, "batch", id).Write(w, f)
		return
	}
	s.poke()
	writeJSON(w, http.StatusOK, render(s.viewPassthrough(r.Context(), st, b, false)))
}

// listing starts a list call: the store, the caller's key and the page
// size (def when absent, at most most), or false once the refusal is
// written.
func (s *Service) listing(w http.ResponseWriter, r *http.Request, f apierror.Family, def, most int) (ledger.BatchStore, ledger.BatchOwner, int, bool) {
	st, e := s.store()
	limit := 0
	if e == nil {
		limit, e = limitInt(r, def, most)
	}
	if e != nil {
		e.Write(w, f)
		return nil, ledger.BatchOwner{}, 0, false
	}
	_, key := s.ownerOf(r)
	return st, key, limit, true
}

// create stores batch b of reqs, due now and expiring after the
// completion window, and wakes the worker; false once the refusal (a
// model the key may not use, a store failure) is written.
func (s *Service) create(w http.ResponseWriter, r *http.Request, st ledger.BatchStore, f apierror.Family, ident *policy.Identity, b ledger.Batch, reqs []Request) (ledger.Batch, bool) {
	param := "requests"
	if f == apierror.OpenAI {
		param = "input_file_id"
	}
	if e := s.screenRequests(ident, reqs, param); e != nil {
		e.Write(w, f)
		return b, false
	}
	for i, q := range reqs {
		if s.o.Allows != nil && !s.o.Allows(ident, q.Model) {
			(&apierror.Error{Status: http.StatusBadRequest, Param: param, Code: "model_not_found",
				Message: param + ": request " + itoa(i) + " (custom_id " + quoteID(q.CustomID) + "): model " + quoteID(q.Model) +
					" does not exist or this key may not use it; GET /v1/models lists the models it may use"}).Write(w, f)
			return b, false
		}
	}
	if pb, handled, ok := s.tryPassthrough(w, r, st, f, ident, b, reqs); handled {
		return pb, ok
	}
	now := s.o.Now().UTC()
	b.Created, b.Expires = now, now.Add(completionWindow)
	items := make([]ledger.BatchItem, len(reqs))
	for i, q := range reqs {
		items[i] = ledger.BatchItem{ID: "batch_req_" + randomID(12), Seq: int64(i), CustomID: q.CustomID, Body: q.Body}
	}
	if err := st.CreateBatch(r.Context(), b, items); err != nil {
		storeError(err, "batch", b.ID).Write(w, f)
		return b, false
	}
	s.poke()
	b.Counts.Pending, b.Total = int64(len(items)), int64(len(items))
	return b, true
}
