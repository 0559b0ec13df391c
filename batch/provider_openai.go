package batch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"

	"github.com/modelgate/modelgate/ledger"
)

// openAIProvider is OpenAI's Files + Batch API: the requests uploaded as
// a JSONL file (purpose batch), then a batch of that file.
type openAIProvider struct{}

func (openAIProvider) create(ctx context.Context, up Upstream, endpoint string, ids []string, bodies [][]byte) (string, string, error) {
	// The JSONL file is written into the form as the form is sent: the
	// requests are in memory once already.
	boundary := multipart.NewWriter(io.Discard).Boundary()
	form := streamed(func(w io.Writer) error {
		mw := multipart.NewWriter(w)
		if err := mw.SetBoundary(boundary); err != nil {
			return err
		}
		if err := mw.WriteField("purpose", "batch"); err != nil {
			return err
		}
		fw, err := mw.CreateFormFile("file", "modelgate-batch.jsonl")
		if err != nil {
			return err
		}
		for i, id := range ids {
			cid, _ := json.Marshal(id)
			for _, part := range [][]byte{[]byte(`{"custom_id":`), cid, []byte(`,"method":"POST","url":"` + endpoint + `","body":`), bodies[i], []byte("}\n")} {
				if _, err := fw.Write(part); err != nil {
					return err
				}
			}
		}
		return mw.Close()
	})
	resp, err := up.call(ctx, http.MethodPost, "/files", "multipart/form-data; boundary="+boundary, form)
	if err != nil {
		return "", "", err
	}
	var file struct {
		ID string `json:"id"`
	}
	err = json.NewDecoder(resp.Body).Decode(&file)
	resp.Body.Close()
	if err != nil || file.ID == "" {
		return "", "", errors.New("the provider's file upload answered no file id")
	}
	create, _ := json.Marshal(map[string]string{"input_file_id": file.ID, "endpoint": endpoint, "completion_window": "24h"})
	out, err := up.callJSON(ctx, http.MethodPost, "/batches", create)
	if err != nil {
		// No batch reads the uploaded file: it goes too (best effort).
		_, _ = up.callJSON(context.WithoutCancel(ctx), http.MethodDelete, "/files/"+url.PathEscape(file.ID), nil)
		return "", file.ID, err
	}
	b, err := decodeOpenAIBatch(out)
	return b.ID, file.ID, err
}

func (openAIProvider) get(ctx context.Context, up Upstream, id string) (providerBatch, error) {
	out, err := up.callJSON(ctx, http.MethodGet, "/batches/"+url.PathEscape(id), nil)
	if err != nil {
		return providerBatch{}, err
	}
	return decodeOpenAIBatch(out)
}

func (openAIProvider) cancel(ctx context.Context, up Upstream, id string) error {
	_, err := up.callJSON(ctx, http.MethodPost, "/batches/"+url.PathEscape(id)+"/cancel", nil)
	return err
}

func (openAIProvider) results(ctx context.Context, up Upstream, b providerBatch, fn func(providerResult) error) error {
	for _, id := range []string{b.OutputFileID, b.ErrorFileID} {
		if id == "" {
			continue
		}
		resp, err := up.call(ctx, http.MethodGet, "/files/"+url.PathEscape(id)+"/content", "", nil)
		if err != nil {
			return err
		}
		err = readLines(resp.Body, func(line []byte) error {
			r, err := decodeOpenAIResult(line)
			if err != nil {
				return err
			}
			return fn(r)
		})
		resp.Body.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func (openAIProvider) forget(ctx context.Context, up Upstream, b providerBatch, inputFileID string) error {
	var first error
	for _, id := range []string{inputFileID, b.OutputFileID, b.ErrorFileID} {
		if id == "" {
			continue
		}
		if _, err := up.callJSON(ctx, http.MethodDelete, "/files/"+url.PathEscape(id), nil); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// openAIEnded are the statuses after which an OpenAI batch runs nothing
// more.
func openAIEnded(status string) bool {
	switch status {
	case "completed", "failed", "expired", "cancelled":
		return true
	}
	return false
}

// decodeOpenAIBatch reads a Batch: its id, status, request_counts and
// result files.
func decodeOpenAIBatch(body []byte) (providerBatch, error) {
	var in struct {
		ID           string  `json:"id"`
		Status       string  `json:"status"`
		OutputFileID *string `json:"output_file_id"`
		ErrorFileID  *string `json:"error_file_id"`
		Counts       struct {
			Total, Completed, Failed int64
		} `json:"request_counts"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return providerBatch{}, errors.New("the provider's batch is not JSON: " + jsonProblem(err))
	}
	if in.ID == "" {
		return providerBatch{}, errors.New("the provider's batch has no id")
	}
	c := in.Counts
	done, failed := max(c.Completed, 0), max(c.Failed, 0)
	b := providerBatch{ID: in.ID, Status: in.Status, Ended: openAIEnded(in.Status),
		Counts: ledger.BatchCounts{Succeeded: done, Errored: failed, Running: max(c.Total-done-failed, 0)}}
	if in.OutputFileID != nil {
		b.OutputFileID = *in.OutputFileID
	}
	if in.ErrorFileID != nil {
		b.ErrorFileID = *in.ErrorFileID
	}
	return b, nil
}

// decodeOpenAIResult reads one line of an output or error file:
// {"id", "custom_id", "response": {"status_code", "request_id", "body"}
// | null, "error": {"code", "message"} | null}.
func decodeOpenAIResult(line []byte) (providerResult, error) {
	var in struct {
		CustomID string `json:"custom_id"`
		Response *struct {
			StatusCode int             `json:"status_code"`
			Body       json.RawMessage `json:"body"`
		} `json:"response"`
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return providerResult{}, errors.New("a results line is not JSON: " + jsonProblem(err))
	}
	r := providerResult{CustomID: in.CustomID}
	switch {
	case in.Response != nil:
		r.Status, r.Body = in.Response.StatusCode, in.Response.Body
		r.State = ledger.ItemErrored
		if r.Status >= 200 && r.Status < 300 {
			r.State = ledger.ItemSucceeded
		}
	case in.Error != nil && in.Error.Code == "batch_expired":
		r.State = ledger.ItemExpired
	case in.Error != nil && in.Error.Code == "batch_cancelled":
		r.State = ledger.ItemCanceled
	case in.Error != nil:
		r.State, r.Status = ledger.ItemErrored, http.StatusInternalServerError
		r.Body, _ = json.Marshal(map[string]any{"error": map[string]any{"message": in.Error.Message, "type": "api_error", "param": nil, "code": in.Error.Code}})
	default:
		return r, errors.New("a results line has neither response nor error")
	}
	if r.Body != nil && !json.Valid(r.Body) {
		r.Body = nil
	}
	return r, nil
}
