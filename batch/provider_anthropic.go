package batch

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// anthropicProvider is Anthropic's Message Batches API
// (POST /v1/messages/batches and its id, cancel and results calls).
type anthropicProvider struct{}

func (anthropicProvider) create(ctx context.Context, up Upstream, _ string, ids []string, bodies [][]byte) (string, string, error) {
	// Written as it is sent: the requests are in memory once already.
	body := streamed(func(w io.Writer) error {
		if _, err := io.WriteString(w, `{"requests":[`); err != nil {
			return err
		}
		for i, id := range ids {
			cid, _ := json.Marshal(id)
			sep := `,{"custom_id":`
			if i == 0 {
				sep = sep[1:]
			}
			for _, part := range [][]byte{[]byte(sep), cid, []byte(`,"params":`), bodies[i], []byte("}")} {
				if _, err := w.Write(part); err != nil {
					return err
				}
			}
		}
		_, err := io.WriteString(w, `]}`)
		return err
	})
	resp, err := up.call(ctx, http.MethodPost, "/v1/messages/batches", "application/json", body)
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return "", "", err
	}
	b, err := decodeAnthropicBatch(out)
	return b.ID, "", err
}

func (anthropicProvider) get(ctx context.Context, up Upstream, id string) (providerBatch, error) {
	out, err := up.callJSON(ctx, http.MethodGet, "/v1/messages/batches/"+url.PathEscape(id), nil)
	if err != nil {
		return providerBatch{}, err
	}
	return decodeAnthropicBatch(out)
}

func (anthropicProvider) cancel(ctx context.Context, up Upstream, id string) error {
	_, err := up.callJSON(ctx, http.MethodPost, "/v1/messages/batches/"+url.PathEscape(id)+"/cancel", []byte("{}"))
	return err
}

func (anthropicProvider) results(ctx context.Context, up Upstream, b providerBatch, fn func(providerResult) error) error {
	resp, err := up.call(ctx, http.MethodGet, "/v1/messages/batches/"+url.PathEscape(b.ID)+"/results", "", nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return readLines(resp.Body, func(line []byte) error {
		r, err := decodeAnthropicResult(line)
		if err != nil {
			return err
		}
		return fn(r)
	})
}

func (anthropicProvider) forget(ctx context.Context, up Upstream, b providerBatch, _ string) error {
	_, err := up.callJSON(ctx, http.MethodDelete, "/v1/messages/batches/"+url.PathEscape(b.ID), nil)
	return err
}

// decodeAnthropicBatch reads a MessageBatch: its id, processing_status
// and request_counts.
func decodeAnthropicBatch(body []byte) (providerBatch, error) {
	var in struct {
		ID     string `json:"id"`
		Status string `json:"processing_status"`
		Counts struct {
			Processing, Succeeded, Errored, Canceled, Expired int64
		} `json:"request_counts"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return providerBatch{}, errors.New("the provider's message batch is not JSON: " + jsonProblem(err))
	}
	if in.ID == "" {
		return providerBatch{}, errors.New("the provider's message batch has no id")
	}
	c := in.Counts
	return providerBatch{ID: in.ID, Status: in.Status, Ended: in.Status == "ended",
		Counts: ledger.BatchCounts{Running: max(c.Processing, 0), Succeeded: max(c.Succeeded, 0), Errored: max(c.Errored, 0),
			Canceled: max(c.Canceled, 0), Expired: max(c.Expired, 0)}}, nil
}

// decodeAnthropicResult reads one line of a Message Batch's results:
// {"custom_id", "result": {"type": "succeeded", "message"} | {"type":
// "errored", "error"} | {"type": "canceled"} | {"type": "expired"}}.
func decodeAnthropicResult(line []byte) (providerResult, error) {
	var in struct {
		CustomID string `json:"custom_id"`
		Result   struct {
			Type    string          `json:"type"`
			Message json.RawMessage `json:"message"`
			Error   json.RawMessage `json:"error"`
		} `json:"result"`
	}
	if err := json.Unmarshal(line, &in); err != nil {
		return providerResult{}, errors.New("a results line is not JSON: " + jsonProblem(err))
	}
	r := providerResult{CustomID: in.CustomID}
	switch in.Result.Type {
	case "succeeded":
		r.State, r.Status, r.Body = ledger.ItemSucceeded, http.StatusOK, in.Result.Message
	case "errored":
		r.State, r.Status, r.Body = ledger.ItemErrored, anthropicErrorStatus(in.Result.Error), in.Result.Error
	case "canceled":
		r.State = ledger.ItemCanceled
	case "expired":
		r.State = ledger.ItemExpired
	default:
		return r, errors.New("a results line has result type " + quoteID(in.Result.Type))
	}
	if r.Body != nil && !json.Valid(r.Body) {
		r.Body = nil
	}
	return r, nil
}

// anthropicErrorStatus is the HTTP status of an Anthropic error body by
// its type, as the Messages API answers it.
func anthropicErrorStatus(body json.RawMessage) int {
	var e struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &e)
	return providers.StatusForErrorType(e.Error.Type)
}
