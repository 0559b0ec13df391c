package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// fakeRunner answers every item with its body echoed in the endpoint's
// shape and counts the runs per body; refuse makes the first n runs 429.
type fakeRunner struct {
	mu     sync.Mutex
	runs   map[string]int
	keys   []string
	refuse atomic.Int32
	block  chan struct{} // when set, every run waits on it
}

func (f *fakeRunner) RunItem(ctx context.Context, id *policy.Identity, path string, body []byte) Answer {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return Answer{Status: 499}
		}
	}
	f.mu.Lock()
	f.runs[string(body)]++
	if id != nil {
		f.keys = append(f.keys, id.KeyID)
	}
	f.mu.Unlock()
	if f.refuse.Add(-1) >= 0 {
		return Answer{Status: http.StatusTooManyRequests, RetryAfter: time.Millisecond}
	}
	if strings.Contains(string(body), "budget") {
		return Answer{Status: http.StatusTooManyRequests, RetryAfter: time.Hour, Final: true,
			Body: (&apierror.Error{Status: 429, Message: "budget exceeded"}).Body(familyOf(path))}
	}
	if strings.Contains(string(body), "binary") {
		return Answer{Status: 200, Body: []byte("\x00\xff")}
	}
	if strings.Contains(string(body), "fail") {
		return Answer{Status: 400, Body: (&apierror.Error{Status: 400, Message: "bad item"}).Body(familyOf(path))}
	}
	if path == "/v1/messages" {
		return Answer{Status: 200, Body: []byte(`{"type":"message","role":"assistant","content":[{"type":"text","text":` + quote(body) + `}]}`)}
	}
	return Answer{Status: 200, Body: []byte(`{"object":"chat.completion","choices":[{"message":{"content":` + quote(body) + `}}]}`)}
}

func quote(b []byte) string { q, _ := json.Marshal(string(b)); return string(q) }

func newRunner() *fakeRunner { return &fakeRunner{runs: map[string]int{}} }

func sqliteStore(t *testing.T) ledger.BatchStore {
	s, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(ledger.BatchStore)
}

// instance is one gateway instance's batch service behind a handler that
// admits every request as key alice.
func instance(t *testing.T, st ledger.BatchStore, run Runner, o Options) *httptest.Server {
	o.Store = func() ledger.BatchStore { return st }
	o.Runner = run
	s := New(o)
	s.Start()
	t.Cleanup(s.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("X-Api-Key")
		if key == "" {
			key = "alice"
		}
		s.ServeHTTP(w, r.WithContext(policy.WithIdentity(r.Context(), &policy.Identity{KeyID: key})))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func call(t *testing.T, method, url, key string, body []byte, contentType string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("X-Api-Key", key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

func field(t *testing.T, b []byte, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %s", err, b)
	}
	v, _ := m[name].(string)
	return v
}

func messageBatch(n int, extra ...string) []byte {
	var reqs []string
	for i := range n {
		reqs = append(reqs, fmt.Sprintf(`{"custom_id":"r%d","params":{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi %d"}]}}`, i, i))
	}
	reqs = append(reqs, extra...)
	return []byte(`{"requests":[` + strings.Join(reqs, ",") + `]}`)
}

// waitEnded polls a batch until its status field says it ended.
func waitEnded(t *testing.T, url, field, ended string) []byte {
	t.Helper()
	var last []byte
	if !testwait.Until(func() bool {
		_, last = call(t, "GET", url, "", nil, "")
		return strings.Contains(string(last), `"`+field+`":"`+ended+`"`)
	}) {
		t.Fatalf("batch never ended: %s", last)
	}
	return last
}

// TestMessageBatchesRoundTrip: create, poll, results, list, delete, each
// item run once, results in Anthropic's shapes; another key sees nothing.
func TestMessageBatchesRoundTrip(t *testing.T) {
	run := newRunner()
	srv := instance(t, sqliteStore(t), run, Options{})
	status, b := call(t, "POST", srv.URL+"/v1/messages/batches", "", messageBatch(5, `{"custom_id":"bad","params":{"model":"m","messages":[{"role":"user","content":"fail"}]}}`,
		`{"custom_id":"bin","params":{"model":"m","messages":[{"role":"user","content":"binary"}]}}`), "application/json")
	if status != 200 || field(t, b, "type") != "message_batch" || field(t, b, "processing_status") != "in_progress" {
		t.Fatalf("create: %d %s", status, b)
	}
	id := field(t, b, "id")
	got := waitEnded(t, srv.URL+"/v1/messages/batches/"+id, "processing_status", "ended")
	var mb struct {
		RequestCounts map[string]int `json:"request_counts"`
		ResultsURL    string         `json:"results_url"`
		EndedAt       string         `json:"ended_at"`
	}
	_ = json.Unmarshal(got, &mb)
	if mb.RequestCounts["succeeded"] != 5 || mb.RequestCounts["errored"] != 2 || mb.ResultsURL != srv.URL+"/v1/messages/batches/"+id+"/results" || mb.EndedAt == "" {
		t.Fatalf("ended batch: %s", got)
	}
	status, res := call(t, "GET", mb.ResultsURL, "", nil, "")
	lines := strings.Split(strings.TrimSpace(string(res)), "\n")
	if status != 200 || len(lines) != 7 {
		t.Fatalf("results: %d %s", status, res)
	}
	if !strings.Contains(lines[0], `"custom_id":"r0","result":{"message":{`) || !strings.Contains(lines[0], `"type":"succeeded"`) {
		t.Errorf("first result: %s", lines[0])
	}
	if !strings.Contains(lines[5], `"custom_id":"bad"`) || !strings.Contains(lines[5], `"type":"errored"`) || !strings.Contains(lines[5], `"invalid_request_error"`) {
		t.Errorf("errored result: %s", lines[5])
	}
	// A 200 whose body is not text is kept as an error naming it.
	if !strings.Contains(lines[6], `"custom_id":"bin"`) || !strings.Contains(lines[6], `"type":"errored"`) || !strings.Contains(lines[6], "was not text") {
		t.Errorf("binary result: %s", lines[6])
	}
	for body, n := range run.runs {
		if n != 1 {
			t.Errorf("item %s ran %d times", body, n)
		}
	}
	if status, b := call(t, "GET", srv.URL+"/v1/messages/batches/"+id, "bob", nil, ""); status != 404 || field(t, b, "type") != "error" {
		t.Errorf("another key's poll: %d %s", status, b)
	}
	if _, b := call(t, "GET", srv.URL+"/v1/messages/batches?limit=10", "", nil, ""); !strings.Contains(string(b), `"first_id":"`+id+`"`) || !strings.Contains(string(b), `"has_more":false`) {
		t.Errorf("list: %s", b)
	}
	if status, b := call(t, "DELETE", srv.URL+"/v1/messages/batches/"+id, "", nil, ""); status != 200 || field(t, b, "type") != "message_batch_deleted" {
		t.Errorf("delete: %d %s", status, b)
	}
	if status, _ := call(t, "GET", srv.URL+"/v1/messages/batches/"+id, "", nil, ""); status != 404 {
		t.Errorf("after delete: %d", status)
	}
}

// TestMessageBatchesRefusals: bad bodies and the limits answer 4xx in
// Anthropic's error shape, naming the request and the fix.
func TestMessageBatchesRefusals(t *testing.T) {
	srv := instance(t, sqliteStore(t), newRunner(), Options{MaxItems: 3, MaxBytes: 4096})
	for _, c := range []struct {
		body   []byte
		status int
		want   string
	}{
		{[]byte(`{"requests":[]}`), 400, "at least one request"},
		{[]byte(`not json`), 400, "requests"},
		{messageBatch(4), 400, "at most 3 requests"},
		{[]byte(`{"requests":[{"custom_id":"a b","params":{"model":"m"}}]}`), 400, "requests.0.custom_id"},
		{[]byte(`{"requests":[{"custom_id":"a","params":{"model":"m"}},{"custom_id":"a","params":{"model":"m"}}]}`), 400, "unique"},
		{[]byte(`{"requests":[{"custom_id":"a","params":{"model":"m","stream":true}}]}`), 400, "streaming is not supported"},
		{[]byte(`{"requests":[{"custom_id":"a","params":{}}]}`), 400, "requests.0.params.model"},
		{bytes.Repeat([]byte(" "), 5000), 413, "batch_max_bytes"},
	} {
		status, b := call(t, "POST", srv.URL+"/v1/messages/batches", "", c.body, "application/json")
		var e struct {
			Type  string
			Error struct{ Type, Message string }
		}
		_ = json.Unmarshal(b, &e)
		if status != c.status || e.Type != "error" || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%.40s: %d %s, want %d naming %q", c.body, status, b, c.status, c.want)
		}
	}
	if status, _ := call(t, "PUT", srv.URL+"/v1/messages/batches", "", nil, ""); status != 405 {
		t.Errorf("PUT: %d", status)
	}
	if status, b := call(t, "GET", srv.URL+"/v1/messages/batches/x/nope", "", nil, ""); status != 404 || field(t, b, "type") != "error" {
		t.Errorf("unknown action: %d %s", status, b)
	}
}

func upload(t *testing.T, url string, content []byte, purpose string) (int, []byte) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	_ = mw.WriteField("purpose", purpose)
	fw, _ := mw.CreateFormFile("file", "input.jsonl")
	_, _ = fw.Write(content)
	_ = mw.Close()
	return call(t, "POST", url+"/v1/files", "", body.Bytes(), mw.FormDataContentType())
}

func openAIInput(n int, extra ...string) []byte {
	var lines []string
	for i := range n {
		lines = append(lines, fmt.Sprintf(`{"custom_id":"req-%d","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"hi %d"}]}}`, i, i))
	}
	return []byte(strings.Join(append(lines, extra...), "\n") + "\n")
}

// TestOpenAIBatchRoundTrip: upload, create, poll, output and error files,
// list; refusals in OpenAI's error shape.
func TestOpenAIBatchRoundTrip(t *testing.T) {
	srv := instance(t, sqliteStore(t), newRunner(), Options{})
	status, f := upload(t, srv.URL, openAIInput(3, `{"custom_id":"x","method":"POST","url":"/v1/chat/completions","body":{"model":"m","messages":[{"role":"user","content":"fail"}]}}`), "batch")
	if status != 200 || field(t, f, "object") != "file" || field(t, f, "purpose") != "batch" {
		t.Fatalf("upload: %d %s", status, f)
	}
	fileID := field(t, f, "id")
	status, b := call(t, "POST", srv.URL+"/v1/batches", "", []byte(`{"input_file_id":"`+fileID+`","endpoint":"/v1/chat/completions","completion_window":"24h","metadata":{"job":"nightly"}}`), "application/json")
	if status != 200 || field(t, b, "object") != "batch" || field(t, b, "status") != "in_progress" {
		t.Fatalf("create: %d %s", status, b)
	}
	id := field(t, b, "id")
	got := waitEnded(t, srv.URL+"/v1/batches/"+id, "status", "completed")
	out, errs := field(t, got, "output_file_id"), field(t, got, "error_file_id")
	if out == "" || errs == "" || !strings.Contains(string(got), `"request_counts":{"completed":3,"failed":1,"total":4}`) || !strings.Contains(string(got), `"job":"nightly"`) {
		t.Fatalf("completed batch: %s", got)
	}
	_, content := call(t, "GET", srv.URL+"/v1/files/"+out+"/content", "", nil, "")
	lines := strings.Split(strings.TrimSpace(string(content)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"custom_id":"req-0"`) || !strings.Contains(lines[0], `"status_code":200`) || !strings.Contains(lines[0], `"error":null`) {
		t.Fatalf("output: %s", content)
	}
	_, content = call(t, "GET", srv.URL+"/v1/files/"+errs+"/content", "", nil, "")
	if !strings.Contains(string(content), `"custom_id":"x"`) || !strings.Contains(string(content), `"status_code":400`) {
		t.Fatalf("errors: %s", content)
	}
	if _, b := call(t, "GET", srv.URL+"/v1/batches?limit=1", "", nil, ""); !strings.Contains(string(b), `"object":"list"`) || !strings.Contains(string(b), id) {
		t.Errorf("list: %s", b)
	}
	if _, b := call(t, "GET", srv.URL+"/v1/files", "", nil, ""); !strings.Contains(string(b), fileID) || !strings.Contains(string(b), out) {
		t.Errorf("files: %s", b)
	}
	// Refusals.
	for _, c := range []struct {
		body, want string
	}{
		{`{"input_file_id":"file-nope","endpoint":"/v1/chat/completions","completion_window":"24h"}`, `no file "file-nope"`},
		{`{"input_file_id":"` + fileID + `","endpoint":"/v1/embeddings","completion_window":"24h"}`, "differs from the batch's endpoint"},
		{`{"input_file_id":"` + fileID + `","endpoint":"/v1/images/generations","completion_window":"24h"}`, "endpoint"},
		{`{"input_file_id":"` + fileID + `","endpoint":"/v1/chat/completions","completion_window":"1h"}`, "completion_window"},
	} {
		status, b := call(t, "POST", srv.URL+"/v1/batches", "", []byte(c.body), "application/json")
		var e struct {
			Error struct{ Message, Type string }
		}
		_ = json.Unmarshal(b, &e)
		if status/100 != 4 || e.Error.Type != apierror.OpenAIType(status) || !strings.Contains(e.Error.Message, c.want) {
			t.Errorf("%s: %d %s", c.body, status, b)
		}
	}
	if status, b := upload(t, srv.URL, []byte("{}\n"), "fine-tune"); status != 400 || !strings.Contains(string(b), `purpose`) {
		t.Errorf("fine-tune upload: %d %s", status, b)
	}
}

// TestOpenAIUploadLimit: a file over max_bytes is a 413 naming the limit.
func TestOpenAIUploadLimit(t *testing.T) {
	srv := instance(t, sqliteStore(t), newRunner(), Options{MaxBytes: 2048})
	status, b := upload(t, srv.URL, bytes.Repeat([]byte("x"), 3000), "batch")
	if status != 413 || !strings.Contains(string(b), "batch_max_bytes") || !strings.Contains(string(b), `"error"`) {
		t.Fatalf("too large: %d %s", status, b)
	}
}

// TestBatchWaitsOutRateLimits: an item the key's limits refuse (429) is
// tried again, not failed; a refusal only time cures (a spent budget)
// ends its item errored.
func TestBatchWaitsOutRateLimits(t *testing.T) {
	run := newRunner()
	run.refuse.Store(3)
	srv := instance(t, sqliteStore(t), run, Options{Workers: 1})
	_, b := call(t, "POST", srv.URL+"/v1/messages/batches", "", messageBatch(2, `{"custom_id":"spent","params":{"model":"m","messages":[{"role":"user","content":"budget"}]}}`), "application/json")
	got := waitEnded(t, srv.URL+"/v1/messages/batches/"+field(t, b, "id"), "processing_status", "ended")
	// The spent budget's refusal is final: that item ends errored at once.
	if !strings.Contains(string(got), `"succeeded":2`) || !strings.Contains(string(got), `"errored":1`) {
		t.Fatalf("after 429s: %s", got)
	}
}

// TestBatchCancelAndExpiry: cancel ends the items not yet run as
// canceled; a batch past expires_at ends its pending items expired.
func TestBatchCancelAndExpiry(t *testing.T) {
	run := newRunner()
	run.block = make(chan struct{})
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	srv := instance(t, sqliteStore(t), run, Options{Workers: 1, Now: now})
	_, b := call(t, "POST", srv.URL+"/v1/messages/batches", "", messageBatch(3), "application/json")
	id := field(t, b, "id")
	_, b = call(t, "POST", srv.URL+"/v1/messages/batches/"+id+"/cancel", "", nil, "")
	if field(t, b, "processing_status") != "canceling" && field(t, b, "processing_status") != "ended" {
		t.Fatalf("cancel: %s", b)
	}
	close(run.block)
	got := waitEnded(t, srv.URL+"/v1/messages/batches/"+id, "processing_status", "ended")
	if !strings.Contains(string(got), `"canceled":`) || strings.Contains(string(got), `"canceled":0`) {
		t.Fatalf("cancelled: %s", got)
	}
	_, res := call(t, "GET", srv.URL+"/v1/messages/batches/"+id+"/results", "", nil, "")
	if !strings.Contains(string(res), `{"type":"canceled"}`) {
		t.Fatalf("results: %s", res)
	}

	run.block = nil
	_, f := upload(t, srv.URL, openAIInput(2), "batch")
	// Every run is refused for now: the items wait, and the clock passes
	// the expiry.
	run.refuse.Store(1 << 20)
	_, b = call(t, "POST", srv.URL+"/v1/batches", "", []byte(`{"input_file_id":"`+field(t, f, "id")+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`), "application/json")
	id = field(t, b, "id")
	clock.Add(int64(25 * time.Hour))
	got = waitEnded(t, srv.URL+"/v1/batches/"+id, "status", "expired")
	_, content := call(t, "GET", srv.URL+"/v1/files/"+field(t, got, "error_file_id")+"/content", "", nil, "")
	if strings.Count(string(content), "batch_expired") != 2 {
		t.Fatalf("error file: %s", content)
	}
}

// TestBatchSharedByInstances: two instances on one PostgreSQL ledger; a
// batch created on A is polled and read on B, and its items, run by
// both workers, run once each.
func TestBatchSharedByInstances(t *testing.T) {
	dsn := pgtest.FreshSchema(t)
	open := func() ledger.BatchStore {
		s, err := ledger.OpenPostgres(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s.(ledger.BatchStore)
	}
	run := newRunner()
	a := instance(t, open(), run, Options{Workers: 3})
	b := instance(t, open(), run, Options{Workers: 3})
	_, created := call(t, "POST", a.URL+"/v1/messages/batches", "", messageBatch(40), "application/json")
	id := field(t, created, "id")
	got := waitEnded(t, b.URL+"/v1/messages/batches/"+id, "processing_status", "ended")
	if !strings.Contains(string(got), `"succeeded":40`) || !strings.Contains(string(got), b.URL) {
		t.Fatalf("on B: %s", got)
	}
	_, res := call(t, "GET", b.URL+"/v1/messages/batches/"+id+"/results", "", nil, "")
	if n := strings.Count(string(res), `"type":"succeeded"`); n != 40 {
		t.Fatalf("results on B: %d lines succeeded", n)
	}
	run.mu.Lock()
	defer run.mu.Unlock()
	for body, n := range run.runs {
		if n != 1 {
			t.Errorf("item %s ran %d times", body, n)
		}
	}
}

// TestBatchResumesAfterStop: an instance that stops with items running
// puts them back at once, and another instance (or the same one
// restarted) runs them and ends the batch.
func TestBatchResumesAfterStop(t *testing.T) {
	st := sqliteStore(t)
	stuck := newRunner()
	stuck.block = make(chan struct{}) // never released: its runs end only when A stops
	a := New(Options{Store: func() ledger.BatchStore { return st }, Runner: stuck, Workers: 2})
	a.Start()
	req := httptest.NewRequest("POST", "/v1/messages/batches", bytes.NewReader(messageBatch(3)))
	req = req.WithContext(policy.WithIdentity(req.Context(), &policy.Identity{KeyID: "alice"}))
	rr := httptest.NewRecorder()
	a.ServeHTTP(rr, req)
	id := field(t, rr.Body.Bytes(), "id")
	if !testwait.Until(func() bool {
		b, err := st.GetBatch(context.Background(), ledger.BatchOwner{KeyID: "alice"}, id)
		return err == nil && b.Counts.Running == 2
	}) {
		t.Fatal("A never ran two items")
	}
	a.Close()
	if b, _ := st.GetBatch(context.Background(), ledger.BatchOwner{KeyID: "alice"}, id); b.Counts.Pending != 3 {
		t.Fatalf("after A stopped: %+v, want every item pending again", b.Counts)
	}
	run := newRunner()
	srv := instance(t, st, run, Options{})
	got := waitEnded(t, srv.URL+"/v1/messages/batches/"+id, "processing_status", "ended")
	if !strings.Contains(string(got), `"succeeded":3`) || len(run.runs) != 3 {
		t.Fatalf("on B: %s (%d runs)", got, len(run.runs))
	}
}
