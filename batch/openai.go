package batch

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
)

// openAIEndpoints are the endpoints a batch may serve: those the gateway
// serves on every backend.
var openAIEndpoints = [...]string{"/v1/chat/completions", "/v1/embeddings", "/v1/responses"}

// serveOpenAI answers /v1/batches[/{id}[/cancel]].
func (s *Service) serveOpenAI(w http.ResponseWriter, r *http.Request, rest string) {
	const f = apierror.OpenAI
	id, action, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/")
	switch {
	case rest == "":
		switch r.Method {
		case http.MethodPost:
			s.createOpenAI(w, r)
		case http.MethodGet:
			s.listOpenAI(w, r)
		default:
			methodNotAllowed(w, r, f, "GET, POST")
		}
	case id == "" || (action != "" && action != "cancel"):
		notFound(w, r, f)
	case action == "cancel":
		if r.Method != http.MethodPost {
			methodNotAllowed(w, r, f, "POST")
			return
		}
		s.cancelOpenAI(w, r, id)
	case r.Method == http.MethodGet:
		s.getOpenAI(w, r, id)
	default:
		methodNotAllowed(w, r, f, "GET")
	}
}

func (s *Service) createOpenAI(w http.ResponseWriter, r *http.Request) {
	const f = apierror.OpenAI
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	ident, key := keyOf(r)
	body, e := readBounded(w, r, 1<<20)
	if e != nil {
		e.Write(w, f)
		return
	}
	var in struct {
		InputFileID      string          `json:"input_file_id"`
		Endpoint         string          `json:"endpoint"`
		CompletionWindow string          `json:"completion_window"`
		Metadata         json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		invalid("body", "want a JSON object with input_file_id, endpoint and completion_window: "+jsonProblem(err)).Write(w, f)
		return
	}
	switch {
	case in.InputFileID == "":
		invalid("input_file_id", "missing; upload the JSONL file with POST /v1/files (purpose \"batch\") and name its id").Write(w, f)
		return
	case !knownEndpoint(in.Endpoint):
		invalid("endpoint", "this gateway runs batches of "+strings.Join(openAIEndpoints[:], ", ")+"; got "+quoteID(in.Endpoint)).Write(w, f)
		return
	case in.CompletionWindow != "24h":
		invalid("completion_window", `want "24h"`).Write(w, f)
		return
	}
	if len(in.Metadata) == 0 || string(in.Metadata) == "null" {
		in.Metadata = json.RawMessage("null")
	} else if in.Metadata[0] != '{' {
		invalid("metadata", "want an object of string values").Write(w, f)
		return
	}
	input, err := st.BatchFileContent(r.Context(), key, in.InputFileID)
	if err == nil && input.Purpose != "batch" {
		err = ledger.ErrBatchFileNotFound
	}
	if err != nil {
		storeError(err, "file", in.InputFileID).Write(w, f)
		return
	}
	reqs, e := DecodeOpenAIInput(input.Content, in.Endpoint, s.o.MaxItems)
	if e != nil {
		e.Write(w, f)
		return
	}
	if s.o.Allows != nil {
		for _, q := range reqs {
			if !s.o.Allows(ident, q.Model) {
				(&apierror.Error{Status: http.StatusBadRequest, Param: "input_file_id", Code: "model_not_found",
					Message: "request " + quoteID(q.CustomID) + ": model " + quoteID(q.Model) + " does not exist or this key may not use it; GET /v1/models lists the models it may use"}).Write(w, f)
				return
			}
		}
	}
	now := s.o.Now().UTC()
	b := ledger.Batch{ID: "batch_" + randomID(12), KeyID: key, API: apiOpenAI, Endpoint: in.Endpoint, InputFileID: in.InputFileID,
		Created: now, Expires: now.Add(completionWindow), Metadata: in.Metadata}
	b.OutputFileID, b.ErrorFileID = "file-"+randomID(12), "file-"+randomID(12)
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
	writeJSON(w, http.StatusOK, openAIBatchJSON(b))
}

func knownEndpoint(e string) bool {
	for _, k := range openAIEndpoints {
		if e == k {
			return true
		}
	}
	return false
}

func (s *Service) getOpenAI(w http.ResponseWriter, r *http.Request, id string) {
	st, e := s.store()
	if e != nil {
		e.Write(w, apierror.OpenAI)
		return
	}
	_, key := keyOf(r)
	b, err := st.GetBatch(r.Context(), key, id)
	if err == nil && b.API != apiOpenAI {
		err = ledger.ErrBatchNotFound
	}
	if err != nil {
		storeError(err, "batch", id).Write(w, apierror.OpenAI)
		return
	}
	writeJSON(w, http.StatusOK, openAIBatchJSON(b))
}

func (s *Service) cancelOpenAI(w http.ResponseWriter, r *http.Request, id string) {
	st, e := s.store()
	if e != nil {
		e.Write(w, apierror.OpenAI)
		return
	}
	_, key := keyOf(r)
	b, err := st.GetBatch(r.Context(), key, id)
	if err == nil && b.API != apiOpenAI {
		err = ledger.ErrBatchNotFound
	}
	if err == nil {
		b, err = st.CancelBatch(r.Context(), key, id, s.o.Now())
	}
	if err != nil {
		storeError(err, "batch", id).Write(w, apierror.OpenAI)
		return
	}
	s.poke()
	writeJSON(w, http.StatusOK, openAIBatchJSON(b))
}

func (s *Service) listOpenAI(w http.ResponseWriter, r *http.Request) {
	const f = apierror.OpenAI
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	limit, e := limitInt(r, 20, 100)
	if e != nil {
		e.Write(w, f)
		return
	}
	_, key := keyOf(r)
	page, err := st.ListBatches(r.Context(), key, apiOpenAI, r.URL.Query().Get("after"), "", limit+1)
	if err != nil {
		storeError(err, "batch", "").Write(w, f)
		return
	}
	more := len(page) > limit
	if more {
		page = page[:limit]
	}
	data := make([]json.RawMessage, len(page))
	for i, b := range page {
		data[i] = openAIBatchJSON(b)
	}
	writeJSON(w, http.StatusOK, openAIList(data, more))
}

func unix(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Unix()
}

// openAIBatchJSON is b as OpenAI's Batch. Its status follows the items:
// in_progress, cancelling, then cancelled, expired or completed.
func openAIBatchJSON(b ledger.Batch) json.RawMessage {
	c := b.Counts
	status := "in_progress"
	out := map[string]any{
		"id": b.ID, "object": "batch", "endpoint": b.Endpoint, "errors": nil, "input_file_id": b.InputFileID,
		"completion_window": "24h", "created_at": b.Created.Unix(), "in_progress_at": b.Created.Unix(),
		"expires_at": b.Expires.Unix(), "output_file_id": nil, "error_file_id": nil,
		"finalizing_at": nil, "completed_at": nil, "failed_at": nil, "expired_at": nil,
		"cancelling_at": unix(b.Cancelled), "cancelled_at": nil, "metadata": rawOr(b.Metadata, "null"),
		"request_counts": map[string]int64{"total": b.Total, "completed": c.Succeeded, "failed": c.Errored + c.Canceled + c.Expired},
	}
	switch {
	case b.Ended.IsZero() && !b.Cancelled.IsZero():
		status = "cancelling"
	case b.Ended.IsZero():
	case !b.Cancelled.IsZero():
		status, out["cancelled_at"] = "cancelled", b.Ended.Unix()
	case c.Expired > 0:
		status, out["expired_at"] = "expired", b.Ended.Unix()
	default:
		status, out["completed_at"] = "completed", b.Ended.Unix()
	}
	if !b.Ended.IsZero() {
		out["finalizing_at"] = b.Ended.Unix()
		if c.Succeeded > 0 {
			out["output_file_id"] = b.OutputFileID
		}
		if c.Errored+c.Canceled+c.Expired > 0 {
			out["error_file_id"] = b.ErrorFileID
		}
	}
	out["status"] = status
	j, _ := json.Marshal(out)
	return j
}

// openAIResults are the output file (2xx answers) and the error file
// (other answers, and requests cancelled or expired), in input order.
func openAIResults(items []ledger.BatchItem) (output, errs []byte) {
	for _, it := range items {
		line := map[string]any{"id": it.ID, "custom_id": it.CustomID, "response": nil, "error": nil}
		switch it.State {
		case ledger.ItemSucceeded, ledger.ItemErrored:
			line["response"] = map[string]any{"status_code": it.StatusCode, "request_id": it.ID, "body": rawOr(it.Result, "null")}
		case ledger.ItemCanceled:
			line["error"] = map[string]string{"code": "batch_cancelled", "message": "This request was not run: the batch was cancelled."}
		default:
			line["error"] = map[string]string{"code": "batch_expired", "message": "This request could not be executed before the completion window expired."}
		}
		b, _ := json.Marshal(line)
		b = append(b, '\n')
		if it.State == ledger.ItemSucceeded {
			output = append(output, b...)
		} else {
			errs = append(errs, b...)
		}
	}
	return output, errs
}
