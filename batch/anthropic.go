package batch

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
)

const (
	apiAnthropic = "anthropic"
	apiOpenAI    = "openai"
	// purposeResults marks the file holding an Anthropic batch's results:
	// kept like OpenAI's files, but not one of them.
	purposeResults = "message_batch_results"
)

// familyOf is the error family of an item served as endpoint.
func familyOf(endpoint string) apierror.Family {
	if endpoint == "/v1/messages" {
		return apierror.Anthropic
	}
	return apierror.OpenAI
}

// anthropicRoutes are /v1/messages/batches[/{id}[/results|/cancel]].
func (s *Service) anthropicRoutes() routes {
	return routes{family: apierror.Anthropic,
		collection: map[string]http.HandlerFunc{http.MethodPost: s.createAnthropic, http.MethodGet: s.listAnthropic},
		item:       map[string]idHandler{http.MethodGet: s.getAnthropic, http.MethodDelete: s.deleteAnthropic},
		actions: map[string]map[string]idHandler{
			"results": {http.MethodGet: s.resultsAnthropic},
			"cancel": {http.MethodPost: func(w http.ResponseWriter, r *http.Request, id string) {
				s.cancel(w, r, apiAnthropic, id, func(b ledger.Batch) json.RawMessage { return anthropicBatchJSON(r, b) })
			}},
		}}
}

func (s *Service) createAnthropic(w http.ResponseWriter, r *http.Request) {
	const f = apierror.Anthropic
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	ident, key := s.ownerOf(r)
	h := s.newHold(r.Context())
	defer h.release()
	body, e := readBounded(w, r, s.o.MaxBytes, h)
	if e != nil {
		e.Write(w, f)
		return
	}
	reqs, e := DecodeMessageBatch(body, s.o.MaxItems)
	if e != nil {
		e.Write(w, f)
		return
	}
	b := ledger.Batch{ID: "msgbatch_" + randomID(12), Site: key.Site, KeyID: key.KeyID, API: apiAnthropic, Endpoint: "/v1/messages", Metadata: json.RawMessage("null")}
	b.OutputFileID = "file-" + b.ID
	if b, ok := s.create(w, r, st, f, ident, b, reqs); ok {
		writeJSON(w, http.StatusOK, anthropicBatchJSON(r, b))
	}
}

func (s *Service) getAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	if _, b, ok := s.batchOf(w, r, apiAnthropic, id); ok {
		writeJSON(w, http.StatusOK, anthropicBatchJSON(r, b))
	}
}

func (s *Service) listAnthropic(w http.ResponseWriter, r *http.Request) {
	const f = apierror.Anthropic
	st, key, limit, ok := s.listing(w, r, f, 20, 1000)
	if !ok {
		return
	}
	q := r.URL.Query()
	// One more than asked says whether there is a next page.
	page, err := st.ListBatches(r.Context(), key, apiAnthropic, q.Get("after_id"), q.Get("before_id"), limit+1)
	if err != nil {
		storeError(err, "message batch", "").Write(w, f)
		return
	}
	more := len(page) > limit
	if more {
		if q.Get("before_id") != "" && q.Get("after_id") == "" {
			page = page[1:]
		} else {
			page = page[:limit]
		}
	}
	data := make([]json.RawMessage, len(page))
	for i, b := range page {
		data[i] = anthropicBatchJSON(r, s.viewPassthrough(r.Context(), st, b, false))
	}
	out := map[string]any{"data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(page) > 0 {
		out["first_id"], out["last_id"] = page[0].ID, page[len(page)-1].ID
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}

func (s *Service) deleteAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	st, b, ok := s.batchOf(w, r, apiAnthropic, id)
	if !ok {
		return
	}
	if err := st.DeleteBatch(r.Context(), b.Owner(), id); err != nil {
		storeError(err, "message batch", id).Write(w, apierror.Anthropic)
		return
	}
	_ = st.DeleteBatchFile(r.Context(), b.Owner(), b.OutputFileID)
	out, _ := json.Marshal(map[string]string{"id": id, "type": "message_batch_deleted"})
	writeJSON(w, http.StatusOK, out)
}

func (s *Service) resultsAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	const f = apierror.Anthropic
	st, b, ok := s.batchOf(w, r, apiAnthropic, id)
	if !ok {
		return
	}
	if b.Ended.IsZero() {
		(&apierror.Error{Status: http.StatusBadRequest,
			Message: "message batch " + quoteID(id) + " is still processing; its results are ready once processing_status is \"ended\""}).Write(w, f)
		return
	}
	gone := &apierror.Error{Status: http.StatusNotFound,
		Message: "the results of message batch " + quoteID(id) + " are no longer kept (the gateway's batch_retention)"}
	meta, err := st.GetBatchFile(r.Context(), b.Owner(), b.OutputFileID)
	if err != nil {
		gone.Write(w, f)
		return
	}
	s.sendFile(w, r, st, meta, "application/x-jsonl", f, gone)
}

// rfc3339 is a time as Anthropic writes it, or null.
func rfc3339(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// anthropicBatchJSON is b as Anthropic's MessageBatch. Counts are live:
// the sum always matches the batch's requests.
func anthropicBatchJSON(r *http.Request, b ledger.Batch) json.RawMessage {
	status := "in_progress"
	switch {
	case !b.Ended.IsZero():
		status = "ended"
	case !b.Cancelled.IsZero():
		status = "canceling"
	}
	var results any
	if !b.Ended.IsZero() {
		results = baseURL(r) + "/v1/messages/batches/" + b.ID + "/results"
	}
	c := b.Counts
	out, _ := json.Marshal(map[string]any{
		"id": b.ID, "type": "message_batch", "processing_status": status,
		"request_counts": map[string]int64{"processing": c.Pending + c.Running, "succeeded": c.Succeeded,
			"errored": c.Errored, "canceled": c.Canceled, "expired": c.Expired},
		"created_at": rfc3339(b.Created), "expires_at": rfc3339(b.Expires), "ended_at": rfc3339(b.Ended),
		"cancel_initiated_at": rfc3339(b.Cancelled), "archived_at": nil, "results_url": results,
	})
	return out
}

// baseURL is how the caller reached this instance, for results_url: each
// instance answers with its own address, the one the client used.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// anthropicResults is the results file: one line per item, in input
// order (Anthropic promises none).
func anthropicResults(items []ledger.BatchItem) []byte {
	var out []byte
	for _, it := range items {
		var result any
		switch it.State {
		case ledger.ItemSucceeded:
			result = map[string]any{"type": "succeeded", "message": rawOr(it.Result, "null")}
		case ledger.ItemErrored:
			result = map[string]any{"type": "errored", "error": anthropicErrorOf(it)}
		case ledger.ItemCanceled:
			result = map[string]string{"type": "canceled"}
		default:
			result = map[string]string{"type": "expired"}
		}
		line, _ := json.Marshal(map[string]any{"custom_id": it.CustomID, "result": result})
		out = append(append(out, line...), '\n')
	}
	return out
}

// anthropicErrorOf is an errored item's ErrorResponse: the gateway's
// answer when it is one, else one made of its status.
func anthropicErrorOf(it ledger.BatchItem) json.RawMessage {
	var probe struct {
		Type  string          `json:"type"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(it.Result, &probe) == nil && probe.Type == "error" && len(probe.Error) > 0 {
		return it.Result
	}
	status := it.StatusCode
	if status < 400 {
		status = http.StatusInternalServerError
	}
	return (&apierror.Error{Status: status, Message: "the request failed with status " + itoa(it.StatusCode)}).Body(apierror.Anthropic)
}

func rawOr(b []byte, def string) json.RawMessage {
	if json.Valid(b) {
		return b
	}
	return json.RawMessage(def)
}
