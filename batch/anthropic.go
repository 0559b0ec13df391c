package batch

import (
	"encoding/json"
	"net/http"
	"strings"
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

// serveAnthropic answers /v1/messages/batches[/{id}[/results|/cancel]].
func (s *Service) serveAnthropic(w http.ResponseWriter, r *http.Request, rest string) {
	const f = apierror.Anthropic
	id, action, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "":
		switch r.Method {
		case http.MethodPost:
			s.createAnthropic(w, r)
		case http.MethodGet:
			s.listAnthropic(w, r)
		default:
			methodNotAllowed(w, r, f, "GET, POST")
		}
	case id == "" || strings.Contains(action, "/"):
		notFound(w, r, f)
	case action == "":
		switch r.Method {
		case http.MethodGet:
			s.getAnthropic(w, r, id)
		case http.MethodDelete:
			s.deleteAnthropic(w, r, id)
		default:
			methodNotAllowed(w, r, f, "GET, DELETE")
		}
	case action == "results":
		if r.Method != http.MethodGet {
			methodNotAllowed(w, r, f, "GET")
			return
		}
		s.resultsAnthropic(w, r, id)
	case action == "cancel":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, r, f, "POST")
			return
		}
		s.cancelAnthropic(w, r, id)
	default:
		notFound(w, r, f)
	}
}

func (s *Service) createAnthropic(w http.ResponseWriter, r *http.Request) {
	const f = apierror.Anthropic
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	ident, key := keyOf(r)
	body, e := readBounded(w, r, s.o.MaxBytes)
	if e != nil {
		e.Write(w, f)
		return
	}
	reqs, e := DecodeMessageBatch(body, s.o.MaxItems)
	if e != nil {
		e.Write(w, f)
		return
	}
	if s.o.Allows != nil {
		for i, q := range reqs {
			if !s.o.Allows(ident, q.Model) {
				(&apierror.Error{Status: http.StatusBadRequest, Param: "requests",
					Message: "requests." + itoa(i) + ".params.model: model " + quoteID(q.Model) + " does not exist or this key may not use it; GET /v1/models lists the models it may use"}).Write(w, f)
				return
			}
		}
	}
	now := s.o.Now().UTC()
	b := ledger.Batch{ID: "msgbatch_" + randomID(12), KeyID: key, API: apiAnthropic, Endpoint: "/v1/messages",
		Created: now, Expires: now.Add(completionWindow), Metadata: json.RawMessage("null")}
	b.OutputFileID = "file-" + b.ID
	items := make([]ledger.BatchItem, len(reqs))
	for i, q := range reqs {
		items[i] = ledger.BatchItem{ID: "batch_req_" + randomID(12), Seq: int64(i), CustomID: q.CustomID, Body: q.Body}
	}
	if err := st.CreateBatch(r.Context(), b, items); err != nil {
		storeError(err, "batch", b.ID).Write(w, f)
		return
	}
	s.poke()
	b.Counts.Pending, b.Total = int64(len(items)), int64(len(items))
	writeJSON(w, http.StatusOK, anthropicBatchJSON(r, b))
}

func (s *Service) getAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	st, e := s.store()
	if e != nil {
		e.Write(w, apierror.Anthropic)
		return
	}
	_, key := keyOf(r)
	b, err := anthropicBatch(r, st, key, id)
	if err != nil {
		storeError(err, "message batch", id).Write(w, apierror.Anthropic)
		return
	}
	writeJSON(w, http.StatusOK, anthropicBatchJSON(r, b))
}

func (s *Service) listAnthropic(w http.ResponseWriter, r *http.Request) {
	const f = apierror.Anthropic
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	limit, e := limitInt(r, 20, 1000)
	if e != nil {
		e.Write(w, f)
		return
	}
	q := r.URL.Query()
	_, key := keyOf(r)
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
		data[i] = anthropicBatchJSON(r, b)
	}
	out := map[string]any{"data": data, "has_more": more, "first_id": nil, "last_id": nil}
	if len(page) > 0 {
		out["first_id"], out["last_id"] = page[0].ID, page[len(page)-1].ID
	}
	b, _ := json.Marshal(out)
	writeJSON(w, http.StatusOK, b)
}

func (s *Service) cancelAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	st, e := s.store()
	if e != nil {
		e.Write(w, apierror.Anthropic)
		return
	}
	_, key := keyOf(r)
	_, err := anthropicBatch(r, st, key, id)
	var b ledger.Batch
	if err == nil {
		b, err = st.CancelBatch(r.Context(), key, id, s.o.Now())
	}
	if err != nil {
		storeError(err, "message batch", id).Write(w, apierror.Anthropic)
		return
	}
	s.poke()
	writeJSON(w, http.StatusOK, anthropicBatchJSON(r, b))
}

func (s *Service) deleteAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	st, e := s.store()
	if e != nil {
		e.Write(w, apierror.Anthropic)
		return
	}
	_, key := keyOf(r)
	b, err := anthropicBatch(r, st, key, id)
	if err == nil {
		err = st.DeleteBatch(r.Context(), key, id)
	}
	if err != nil {
		storeError(err, "message batch", id).Write(w, apierror.Anthropic)
		return
	}
	_ = st.DeleteBatchFile(r.Context(), key, b.OutputFileID)
	out, _ := json.Marshal(map[string]string{"id": id, "type": "message_batch_deleted"})
	writeJSON(w, http.StatusOK, out)
}

func (s *Service) resultsAnthropic(w http.ResponseWriter, r *http.Request, id string) {
	const f = apierror.Anthropic
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	_, key := keyOf(r)
	b, err := anthropicBatch(r, st, key, id)
	if err != nil {
		storeError(err, "message batch", id).Write(w, f)
		return
	}
	if b.Ended.IsZero() {
		(&apierror.Error{Status: http.StatusBadRequest,
			Message: "message batch " + quoteID(id) + " is still processing; its results are ready once processing_status is \"ended\""}).Write(w, f)
		return
	}
	file, err := st.BatchFileContent(r.Context(), key, b.OutputFileID)
	if err != nil {
		(&apierror.Error{Status: http.StatusNotFound,
			Message: "the results of message batch " + quoteID(id) + " are no longer kept (the gateway's batch_retention)"}).Write(w, f)
		return
	}
	w.Header().Set("Content-Type", "application/x-jsonl")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(file.Content)
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

// anthropicBatch is the key's Message Batch id: an OpenAI batch is not one.
func anthropicBatch(r *http.Request, st ledger.BatchStore, key, id string) (ledger.Batch, error) {
	b, err := st.GetBatch(r.Context(), key, id)
	if err == nil && b.API != apiAnthropic {
		err = ledger.ErrBatchNotFound
	}
	return b, err
}
