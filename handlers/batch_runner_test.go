package handlers

import (
	"bytes"
	"context"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// TestBatchItemsRunThroughTheGateway: a Message Batch on a local (echo)
// backend is run by the gateway itself, each item one request of the
// key with one usage record labelled "batch"; a model the key may not
// use is refused at create, in Anthropic's shape.
func TestBatchItemsRunThroughTheGateway(t *testing.T) {
	st := sqliteLedger(t)
	yaml := "model_list:\n  - model_name: local\n    proxy_params:\n      model: echo/e\n  - model_name: other\n    proxy_params:\n      model: echo/o\n"
	g, obs := testGateway(t, yaml, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return st.(ledger.ResponseStore) }
	})
	bob := &policy.Identity{KeyID: "bob", Models: map[string]struct{}{"local": {}}}
	send := func(method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req = req.WithContext(policy.WithIdentity(req.Context(), bob))
		rr := httptest.NewRecorder()
		g.ServeHTTP(rr, req)
		return rr
	}
	rr := send(http.MethodPost, "/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"other","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}}]}`)
	if rr.Code != 400 || !strings.Contains(rr.Body.String(), `"type":"invalid_request_error"`) || !strings.Contains(rr.Body.String(), "request 0 (custom_id") {
		t.Fatalf("model the key may not use: %d %s", rr.Code, rr.Body)
	}
	rr = send(http.MethodPost, "/v1/messages/batches", `{"requests":[`+
		`{"custom_id":"a","params":{"model":"local","max_tokens":50,"messages":[{"role":"user","content":"first"}]}},`+
		`{"custom_id":"b","params":{"model":"local","max_tokens":50,"messages":[{"role":"user","content":"second"}]}}]}`)
	var created struct{ ID string }
	if err := json.Unmarshal(rr.Body.Bytes(), &created); rr.Code != 200 || err != nil {
		t.Fatalf("create: %d %s", rr.Code, rr.Body)
	}
	if !testwait.Until(func() bool {
		return strings.Contains(send(http.MethodGet, "/v1/messages/batches/"+created.ID, "").Body.String(), `"processing_status":"ended"`)
	}) {
		t.Fatalf("never ended: %s", send(http.MethodGet, "/v1/messages/batches/"+created.ID, "").Body)
	}
	res := send(http.MethodGet, "/v1/messages/batches/"+created.ID+"/results", "").Body.String()
	if strings.Count(res, `"type":"succeeded"`) != 2 || !strings.Contains(res, `"type":"message"`) {
		t.Fatalf("results: %s", res)
	}
	var batchRecs int
	for _, rec := range obs.Records() {
		if rec.Endpoint == ledger.EndpointBatch && rec.KeyID == "bob" && rec.Alias == "local" && rec.Status == 200 {
			batchRecs++
		}
	}
	if batchRecs != 2 {
		t.Fatalf("records labelled batch: %d of %+v", batchRecs, obs.Records())
	}
}

// TestBatchItemWaitsForTheKeysLimit: while the key holds its one
// concurrent request (max_concurrent_per_key 1) its batch item is refused
// with 429 and put back, not failed; once the interactive request ends,
// the item runs and the batch ends succeeded.
func TestBatchItemWaitsForTheKeysLimit(t *testing.T) {
	st := sqliteLedger(t)
	release, arrived := make(chan struct{}), make(chan struct{}, 1)
	slow := newFakeUpstream(t, "slow", func(w http.ResponseWriter, r *http.Request, n int64) {
		arrived <- struct{}{}
		<-release
		writeOpenAI(w, r, "slow")
	})
	yaml := "model_list:\n" + entry("slow", slow.srv.URL) + "  - model_name: local\n    proxy_params:\n      model: echo/e\n"
	g, _ := testGateway(t, yaml, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return st.(ledger.ResponseStore) }
		o.MaxConcurrentPerKey = 1
	})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the fake's Close, which waits for the held request
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		post(g, alice, "/v1/chat/completions", chatBody("slow", false))
	}()
	<-arrived
	rr := post(g, alice, "/v1/messages/batches", `{"requests":[{"custom_id":"a","params":{"model":"local","max_tokens":50,"messages":[{"role":"user","content":"later"}]}}]}`)
	var created struct{ ID string }
	if err := json.Unmarshal(rr.Body.Bytes(), &created); rr.Code != 200 || err != nil {
		t.Fatalf("create: %d %s", rr.Code, rr.Body)
	}
	// Tried, refused by the key's limit and put back: pending again,
	// claimed once already.
	refusedAndBack := func() bool {
		items, err := st.(ledger.BatchStore).BatchItems(context.Background(), created.ID)
		return err == nil && len(items) == 1 && items[0].State == ledger.ItemPending && items[0].Attempts >= 1
	}
	if !testwait.Until(refusedAndBack) {
		t.Fatal("the batch item was never refused by the key's limit and put back")
	}
	get := func() string {
		req := httptest.NewRequest(http.MethodGet, "/v1/messages/batches/"+created.ID, nil)
		rr := httptest.NewRecorder()
		g.ServeHTTP(rr, req.WithContext(policy.WithIdentity(req.Context(), alice)))
		return rr.Body.String()
	}
	if b := get(); !strings.Contains(b, `"processing":1`) {
		t.Fatalf("refused item not waiting: %s", b)
	}
	free()
	wg.Wait()
	if !testwait.Until(func() bool { return strings.Contains(get(), `"succeeded":1`) }) {
		t.Fatalf("never ran: %s", get())
	}
}

// TestBatchUploadWithinBodyMemory: a gateway with max_body_memory of
// 4 MiB refuses a 2 MiB batch input file (held four times over while it
// is read and stored) with 413 in OpenAI's shape, and gives back what
// it held: batch inputs count against the same bound as request bodies.
func TestBatchUploadWithinBodyMemory(t *testing.T) {
	st := sqliteLedger(t)
	g, _ := testGateway(t, "model_list:\n  - model_name: local\n    proxy_params:\n      model: echo/e\n", func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return st.(ledger.ResponseStore) }
		o.MaxRequestBody, o.BodyMemory = 1<<20, 4<<20
	})
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "input.jsonl")
	line := `{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"local","messages":[{"role":"user","content":"hi"}]}}` + "\n"
	_, _ = fw.Write(bytes.Repeat([]byte(line), (2<<20)/len(line)))
	_ = mw.Close()
	req := httptest.NewRequest(http.MethodPost, "/v1/files", &body)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req = req.WithContext(policy.WithIdentity(req.Context(), &policy.Identity{KeyID: "bob"}))
	rr := httptest.NewRecorder()
	g.ServeHTTP(rr, req)
	if rr.Code != http.StatusRequestEntityTooLarge || !strings.Contains(rr.Body.String(), `"error"`) || !strings.Contains(rr.Body.String(), "max_body_memory") {
		t.Fatalf("a batch file past max_body_memory: %d %.300s", rr.Code, rr.Body)
	}
	if used, _, _ := g.bodyMem.stats(); used != 0 {
		t.Fatalf("the body memory holds %d bytes after the refusal", used)
	}
}
