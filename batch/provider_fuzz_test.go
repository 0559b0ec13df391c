package batch

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// FuzzDecodeProviderBatch: any provider answer decodes into a batch with
// an id and counts that are never negative, or an error; never a panic.
func FuzzDecodeProviderBatch(f *testing.F) {
	f.Add([]byte(`{"id":"msgbatch_1","type":"message_batch","processing_status":"ended","request_counts":{"processing":0,"succeeded":2,"errored":1,"canceled":0,"expired":0}}`))
	f.Add([]byte(`{"id":"batch_1","object":"batch","status":"completed","output_file_id":"file-1","error_file_id":null,"request_counts":{"total":3,"completed":2,"failed":1}}`))
	f.Add([]byte(`{"id":"x","request_counts":{"total":-5,"completed":9}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, decode := range []func([]byte) (providerBatch, error){decodeAnthropicBatch, decodeOpenAIBatch} {
			b, err := decode(body)
			if err != nil {
				continue
			}
			c := b.Counts
			if b.ID == "" || c.Running < 0 || c.Succeeded < 0 || c.Errored < 0 || c.Canceled < 0 || c.Expired < 0 {
				t.Fatalf("decoded %+v", b)
			}
		}
	})
}

// FuzzDecodeProviderResult: any results line decodes into a known state
// with a body that is JSON or none, or an error; the answer's usage is
// never negative and the alias put in a body keeps it JSON.
func FuzzDecodeProviderResult(f *testing.F) {
	f.Add([]byte(`{"custom_id":"a","result":{"type":"succeeded","message":{"model":"m","usage":{"input_tokens":10,"output_tokens":5}}}}`))
	f.Add([]byte(`{"custom_id":"b","result":{"type":"errored","error":{"type":"error","error":{"type":"invalid_request_error","message":"x"}}}}`))
	f.Add([]byte(`{"id":"r","custom_id":"c","response":{"status_code":200,"body":{"model":"m","usage":{"prompt_tokens":7,"completion_tokens":3,"prompt_tokens_details":{"cached_tokens":9}}}},"error":null}`))
	f.Add([]byte(`{"custom_id":"d","response":null,"error":{"code":"batch_expired","message":"x"}}`))
	states := map[string]bool{ledger.ItemSucceeded: true, ledger.ItemErrored: true, ledger.ItemCanceled: true, ledger.ItemExpired: true}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, decode := range []func([]byte) (providerResult, error){decodeAnthropicResult, decodeOpenAIResult} {
			r, err := decode(line)
			if err != nil {
				continue
			}
			if !states[r.State] || (r.Body != nil && !json.Valid(r.Body)) {
				t.Fatalf("decoded %+v", r)
			}
			for _, endpoint := range []string{"/v1/messages", "/v1/chat/completions", "/v1/responses"} {
				// The settlement clamps what it reads; reading must not fail.
				_ = answerUsage(endpoint, r.Body)
			}
			if r.Body != nil {
				if named := withModel(r.Body, "alias"); !json.Valid(named) {
					t.Fatalf("withModel made %q of %q", named, r.Body)
				}
			}
		}
	})
}

// TestReadLinesBoundsALine: a results line past the bound is an error,
// not a read of unbounded memory.
func TestReadLinesBoundsALine(t *testing.T) {
	n := 0
	err := readLines(strings.NewReader("{}\n\n"+strings.Repeat("x", maxResultLine+1)), func([]byte) error { n++; return nil })
	if err == nil || n != 1 {
		t.Fatalf("lines %d, err %v", n, err)
	}
}
