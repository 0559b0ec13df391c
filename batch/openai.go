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

// openAIRoutes are /v1/batches[/{id}[/cancel]].
func (s *Service) openAIRoutes() routes {
	return routes{family: apierror.OpenAI,
		collection: map[string]http.HandlerFunc{http.MethodPost: s.createOpenAI, http.MethodGet: s.listOpenAI},
		item:       map[string]idHandler{http.MethodGet: s.getOpenAI},
		actions: map[string]map[string]idHandler{"cancel": {http.MethodPost: func(w http.ResponseWriter, r *http.Request, id string) {
			s.cancel(w, r, apiOpenAI, id, openAIBatchJSON)
		}}}}
}

func (s *Service) createOpenAI(w http.ResponseWriter, r *http.Request) {
	const f = apierror.OpenAI
	st, e := s.store()
	if e != nil {
		e.Write(w, f)
		return
	}
	ident, key := s.ownerOf(r)
	h := s.newHold(r.Context())
	defer h.release()
	body, e := readBounded(w, r, 1<<20, h)
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
	// The input file is read whole: its working set is counted first.
	meta, err := st.GetBatchFile(r.Context(), key, in.InputFileID)
	if err != nil {
		storeError(err, "file", in.InputFileID).Write(w, f)
		return
	}
	if e := h.cover(meta.Bytes); e != nil {
		e.Write(w, f)
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
	b := ledger.Batch{ID: "batch_" + randomID(12), Site: key.Site, KeyID: key.KeyID, API: apiOpenAI, Endpoint: in.Endpoint, InputFileID: in.InputFileID, Metadata: in.Metadata}
	b.OutputFileID, b.ErrorFileID = "file-"+randomID(12), "file-"+randomID(12)
	if b, ok := s.create(w, r, st, f, ident, b, reqs); ok {
		writeJSON(w, http.StatusOK, openAIBatchJSON(b))
	}
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
	if _, b, ok := s.batchOf(w, r, apiOpenAI, id); ok {
		writeJSON(w, http.StatusOK, openAIBatchJSON(b))
	}
}

func (s *Service) listOpenAI(w http.ResponseWriter, r *http.Request) {
	const f = apierror.OpenAI
	st, key, limit, ok := s.listing(w, r, f, 20, 100)
	if !ok {
		return
	}
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
		data[i] = openAIBatchJSON(s.viewPassthrough(r.Context(), st, b, false))
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
