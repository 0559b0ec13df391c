package handlers

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// passthroughSetup is a gateway with the aliases claude (anthropic/) and
// oa (openai/) on one fake provider account with batch APIs, and local
// (echo); its key has a $5 monthly budget unless the test sets another.
type passthroughSetup struct {
	st   ledger.Store
	fake *fakes.BatchAPI
	g    *Gateway
	id   *policy.Identity
}

func newPassthroughSetup(t *testing.T, entryLines ...string) *passthroughSetup {
	t.Helper()
	s := &passthroughSetup{st: sqliteLedger(t), fake: &fakes.BatchAPI{Key: "sk-upstream-secret", Hold: true}}
	srv := httptest.NewServer(s.fake)
	t.Cleanup(srv.Close)
	prices := "    model_info:\n      input_cost_per_token: 0.000003\n      output_cost_per_token: 0.000015\n"
	for _, l := range entryLines {
		prices += "    " + l + "\n"
	}
	yaml := "model_list:\n" +
		kindEntry("claude", "anthropic/claude-upstream-x", srv.URL, "batch: provider") + prices +
		kindEntry("oa", "openai/gpt-upstream-y", srv.URL, "batch: provider") + prices +
		"  - model_name: local\n    proxy_params:\n      model: echo/e\n"
	s.g, _ = testGateway(t, yaml, func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return s.st.(ledger.ResponseStore) }
		o.Budgets = policy.NewBudgets(func() ledger.SpendStore { return s.st.(ledger.SpendStore) }, nil)
		o.Batches.PollCache = time.Millisecond
		o.Batches.CheckEvery = 10 * time.Millisecond
		if len(entryLines) > 0 {
			fw, err := testFirewall()
			if err != nil {
				t.Fatal(err)
			}
			o.Secrets = fw
		}
	})
	s.id = &policy.Identity{KeyID: "bob", Role: policy.RoleUser, Limits: ledger.Limits{BudgetCents: ledger.Cents(500), BudgetPeriod: "monthly"}}
	return s
}

func (s *passthroughSetup) send(method, path, contentType string, body []byte) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, bytes.NewReader(body))
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req = req.WithContext(policy.WithIdentity(req.Context(), s.id))
	rr := httptest.NewRecorder()
	s.g.ServeHTTP(rr, req)
	return rr
}

func (s *passthroughSetup) get(path string) string {
	return s.send(http.MethodGet, path, "", nil).Body.String()
}

// batchRecords are the ledger's records of batch requests.
func (s *passthroughSetup) batchRecords(t *testing.T) []ledger.Record {
	t.Helper()
	recs, err := s.st.Query(t.Context(), ledger.Filter{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var out []ledger.Record
	for _, r := range recs {
		if r.Endpoint == ledger.EndpointBatch {
			out = append(out, r)
		}
	}
	return out
}

// settleOne creates a Message Batch of body's requests, has the provider
// end it and returns its records once it settled.
func (s *passthroughSetup) settleOne(t *testing.T, body string) []ledger.Record {
	t.Helper()
	id := createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", []byte(body)))
	s.fake.Finish()
	if !testwait.Until(func() bool { return strings.Contains(s.get("/v1/messages/batches/"+id), `"processing_status":"ended"`) }) {
		t.Fatalf("never ended: %s", s.get("/v1/messages/batches/"+id))
	}
	return s.batchRecords(t)
}

func messageItem(id, model string, maxTokens int) string {
	return `{"custom_id":"` + id + `","params":{"model":"` + model + `","max_tokens":` + strconv.Itoa(maxTokens) + `,"messages":[{"role":"user","content":"hi"}]}}`
}

// createdID reads a created batch's id, failing the test on a refusal.
func createdID(t *testing.T, rr *httptest.ResponseRecorder) string {
	t.Helper()
	var b struct{ ID string }
	if err := json.Unmarshal(rr.Body.Bytes(), &b); rr.Code != 200 || err != nil || b.ID == "" {
		t.Fatalf("create: %d %s", rr.Code, rr.Body)
	}
	return b.ID
}

// Half the list price of the fake's 10 input and 5 output tokens.
const discountedItemPico = (10*3_000_000 + 5*15_000_000) / 2

// TestBatchPassthroughAnthropic: a Message Batch on an anthropic/ alias
// goes to the provider's Message Batches API with the deployment's key
// and the upstream model; polls answer from the provider; once it ended,
// the results carry the alias and the custom ids, and the ledger has one
// record per request at half the list price, written once however often
// it is polled.
func TestBatchPassthroughAnthropic(t *testing.T) {
	s := newPassthroughSetup(t)
	id := createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+messageItem("ok-1", "claude", 100)+`,`+messageItem("err-2", "claude", 100)+`]}`)))
	if n, bad := s.fake.Creates(); n != 1 || bad != 0 {
		t.Fatalf("provider creates %d, calls with another credential %d", n, bad)
	}
	if m := s.fake.Models(); len(m) != 2 || m[0] != "claude-upstream-x" || m[1] != "claude-upstream-x" {
		t.Fatalf("the provider saw models %v, want the upstream model", m)
	}
	if got := s.get("/v1/messages/batches/" + id); !strings.Contains(got, `"processing_status":"in_progress"`) || !strings.Contains(got, `"processing":2`) {
		t.Fatalf("poll while the provider runs it: %s", got)
	}
	s.fake.Finish()
	if !testwait.Until(func() bool { return strings.Contains(s.get("/v1/messages/batches/"+id), `"processing_status":"ended"`) }) {
		t.Fatalf("never ended: %s", s.get("/v1/messages/batches/"+id))
	}
	if got := s.get("/v1/messages/batches/" + id); !strings.Contains(got, `"succeeded":1`) || !strings.Contains(got, `"errored":1`) {
		t.Fatalf("ended counts: %s", got)
	}
	res := s.get("/v1/messages/batches/" + id + "/results")
	if !strings.Contains(res, `"custom_id":"ok-1"`) || !strings.Contains(res, `"model":"claude"`) || strings.Contains(res, "claude-upstream-x") ||
		!strings.Contains(res, `"type":"errored"`) || !strings.Contains(res, `"invalid_request_error"`) {
		t.Fatalf("results: %s", res)
	}
	s.get("/v1/messages/batches/" + id)
	if batches, _ := s.fake.Kept(); batches != 0 {
		t.Fatalf("the provider still keeps the settled batch")
	}
	recs := s.batchRecords(t)
	if len(recs) != 2 {
		t.Fatalf("%d batch records, want one per request: %+v", len(recs), recs)
	}
	for _, r := range recs {
		// The errored request used nothing and costs nothing.
		want, status := int64(discountedItemPico), 200
		if r.Outcome == ledger.OutcomeError {
			want, status = 0, 400
		}
		if r.KeyID != "bob" || r.Alias != "claude" || r.UpstreamModel != "claude-upstream-x" || r.CostPicoUSD != want || r.Status != status || r.ServiceTier != "batch" {
			t.Errorf("record %+v; want bob's, alias claude, %d pico, status %d", r, want, status)
		}
	}
}

// TestBatchPassthroughOpenAI: an OpenAI batch of an openai/ alias is
// uploaded to the provider's Files API and created at its Batch API; the
// output file the gateway serves under its own id names the alias.
func TestBatchPassthroughOpenAI(t *testing.T) {
	s := newPassthroughSetup(t)
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	for _, cid := range []string{"a", "b"} {
		_, _ = fw.Write([]byte(`{"custom_id":"` + cid + `","method":"POST","url":"/v1/chat/completions","body":{"model":"oa","messages":[{"role":"user","content":"hi"}],"max_tokens":50}}` + "\n"))
	}
	_ = mw.Close()
	file := createdID(t, s.send(http.MethodPost, "/v1/files", mw.FormDataContentType(), form.Bytes()))
	id := createdID(t, s.send(http.MethodPost, "/v1/batches", "", []byte(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`)))
	if m := s.fake.Models(); len(m) != 2 || m[0] != "gpt-upstream-y" {
		t.Fatalf("the provider saw models %v", m)
	}
	s.fake.Finish()
	var b struct {
		Status       string `json:"status"`
		OutputFileID string `json:"output_file_id"`
	}
	if !testwait.Until(func() bool {
		return json.Unmarshal([]byte(s.get("/v1/batches/"+id)), &b) == nil && b.Status == "completed"
	}) {
		t.Fatalf("never completed: %s", s.get("/v1/batches/"+id))
	}
	out := s.get("/v1/files/" + b.OutputFileID + "/content")
	if strings.Count(out, `"status_code":200`) != 2 || !strings.Contains(out, `"custom_id":"a"`) || !strings.Contains(out, `"model":"oa"`) || strings.Contains(out, "gpt-upstream-y") {
		t.Fatalf("output file: %s", out)
	}
	if recs := s.batchRecords(t); len(recs) != 2 || recs[0].CostPicoUSD != discountedItemPico {
		t.Fatalf("records: %+v", recs)
	}
	// Settled, the gateway keeps the results: the provider's input and
	// output files are deleted.
	if _, files := s.fake.Kept(); files != 0 {
		t.Fatalf("the provider still keeps %d files", files)
	}
}

// TestBatchPassthroughRefusedOverBudget: a batch whose worst case (each
// request's input and max_tokens at the batch price) exceeds what the
// key's budget has left is refused at create, in the API's shape, and
// the provider never sees it; while a batch is held, its hold counts.
func TestBatchPassthroughRefusedOverBudget(t *testing.T) {
	s := newPassthroughSetup(t)
	// 100k output tokens at $7.50 a million (half of $15) is $0.75 each:
	// six fit in $5, seven do not.
	items := func(n int) []byte {
		var parts []string
		for i := range n {
			parts = append(parts, messageItem("q"+strconv.Itoa(i), "claude", 100000))
		}
		return []byte(`{"requests":[` + strings.Join(parts, ",") + `]}`)
	}
	rr := s.send(http.MethodPost, "/v1/messages/batches", "", items(7))
	if rr.Code != http.StatusTooManyRequests || !strings.Contains(rr.Body.String(), `"type":"error"`) || !strings.Contains(rr.Body.String(), "budget") {
		t.Fatalf("over budget: %d %s", rr.Code, rr.Body)
	}
	createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", items(4)))
	// $3 held of $5: three more do not fit while it is held.
	if rr := s.send(http.MethodPost, "/v1/messages/batches", "", items(3)); rr.Code != http.StatusTooManyRequests {
		t.Fatalf("a second batch past the first's hold: %d %s", rr.Code, rr.Body)
	}
	if n, _ := s.fake.Creates(); n != 1 {
		t.Fatalf("the provider got %d batches, want only the one that fits", n)
	}
}

// TestBatchPassthroughCancelAndMixed: a cancel goes to the provider and
// the batch ends canceled with no record; a batch mixing the provider's
// alias with a local backend is run by the gateway as before.
func TestBatchPassthroughCancelAndMixed(t *testing.T) {
	s := newPassthroughSetup(t)
	id := createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+messageItem("c1", "claude", 10)+`]}`)))
	if rr := s.send(http.MethodPost, "/v1/messages/batches/"+id+"/cancel", "", nil); rr.Code != 200 || !strings.Contains(rr.Body.String(), `"processing_status":"canceling"`) {
		t.Fatalf("cancel: %d %s", rr.Code, rr.Body)
	}
	if !testwait.Until(func() bool { return strings.Contains(s.get("/v1/messages/batches/"+id), `"canceled":1`) }) {
		t.Fatalf("never ended canceled: %s", s.get("/v1/messages/batches/"+id))
	}
	if res := s.get("/v1/messages/batches/" + id + "/results"); !strings.Contains(res, `"type":"canceled"`) {
		t.Fatalf("results: %s", res)
	}
	if recs := s.batchRecords(t); len(recs) != 0 {
		t.Fatalf("a cancelled request that never ran has a record: %+v", recs)
	}
	mixed := createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+messageItem("m1", "claude", 10)+`,`+messageItem("m2", "local", 10)+`]}`)))
	if n, _ := s.fake.Creates(); n != 1 {
		t.Fatalf("a mixed batch went to the provider (%d creates)", n)
	}
	if !testwait.Until(func() bool {
		return strings.Contains(s.get("/v1/messages/batches/"+mixed), `"processing_status":"ended"`)
	}) {
		t.Fatalf("the mixed batch never ended: %s", s.get("/v1/messages/batches/"+mixed))
	}
}

// TestBatchAPIOfAnEntry: batches go to a provider's batch API by default
// only at the provider's own address; a compatible server (vLLM behind
// openai/ with an api_base) and a seat never; batch: provider and batch:
// gateway say otherwise.
func TestBatchAPIOfAnEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    modellist.Deployment
		want string
	}{
		{"anthropic", modellist.Deployment{Kind: modellist.KindAnthropic, Provider: "anthropic", APIBase: "https://api.anthropic.com"}, "anthropic"},
		{"openai", modellist.Deployment{Kind: modellist.KindOpenAI, Provider: "openai", APIBase: "https://api.openai.com/v1"}, "openai"},
		{"vllm at openai/ api_base", modellist.Deployment{Kind: modellist.KindOpenAI, Provider: "openai", Local: true, APIBase: "http://10.0.0.5:8000/v1"}, ""},
		{"hosted_vllm", modellist.Deployment{Kind: modellist.KindOpenAI, Provider: "hosted_vllm", Local: true, APIBase: "http://gpu:8000/v1"}, ""},
		{"groq", modellist.Deployment{Kind: modellist.KindOpenAI, Provider: "groq", APIBase: "https://api.groq.com/openai/v1"}, ""},
		{"anthropic behind a proxy", modellist.Deployment{Kind: modellist.KindAnthropic, Provider: "anthropic", APIBase: "https://proxy.example.com"}, ""},
		{"proxy said to serve batches", modellist.Deployment{Kind: modellist.KindAnthropic, Provider: "anthropic", APIBase: "https://proxy.example.com", Batch: modellist.BatchProvider}, "anthropic"},
		{"batch: gateway", modellist.Deployment{Kind: modellist.KindAnthropic, Provider: "anthropic", APIBase: "https://api.anthropic.com", Batch: modellist.BatchGateway}, ""},
		{"a seat", modellist.Deployment{Kind: modellist.KindAnthropic, Provider: "anthropic", APIBase: "https://api.anthropic.com", PassthroughAuth: true}, ""},
		{"echo", modellist.Deployment{Kind: modellist.KindEcho, Provider: "echo", Local: true}, ""},
	} {
		if got := batchAPI(&tc.e); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestBatchPassthroughSecretFirewall: the firewall's policy applies to
// every request of a passed-through batch before the provider sees it:
// block refuses the batch naming the request, redact sends the
// placeholder.
func TestBatchPassthroughSecretFirewall(t *testing.T) {
	c := secrettest.Corpus(2)[3] // an AWS key id
	item := func(id string) string {
		text, _ := json.Marshal("deploy with " + c.Text)
		return `{"custom_id":"` + id + `","params":{"model":"claude","max_tokens":10,"messages":[{"role":"user","content":` + string(text) + `}]}}`
	}
	s := newPassthroughSetup(t, "secrets: {action: block}")
	rr := s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+messageItem("clean", "claude", 10)+`,`+item("leaky")+`]}`))
	if rr.Code != http.StatusBadRequest || !strings.Contains(rr.Body.String(), "request 1 (custom_id leaky)") || strings.Contains(rr.Body.String(), c.Value) {
		t.Fatalf("blocked: %d %s", rr.Code, rr.Body)
	}
	if n, _ := s.fake.Creates(); n != 0 {
		t.Fatalf("the provider got a batch with a blocked secret")
	}
	s = newPassthroughSetup(t, "secrets: {action: redact}")
	createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+item("leaky")+`]}`)))
	if sent := s.fake.Last(); len(sent) == 0 || bytes.Contains(sent, []byte(c.Value)) {
		t.Fatalf("the provider was sent %s", sent)
	}
}

// TestBatchPassthroughAnswersScreened: a secret the model wrote in a
// passed-through batch's answer is redacted before the results are
// stored, as the answers of requests the gateway runs itself are.
func TestBatchPassthroughAnswersScreened(t *testing.T) {
	c := secrettest.Corpus(2)[3]
	s := newPassthroughSetup(t, "secrets: {action: redact}")
	s.fake.Reply = "use " + c.Text
	id := createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+messageItem("a1", "claude", 10)+`]}`)))
	s.fake.Finish()
	if !testwait.Until(func() bool { return strings.Contains(s.get("/v1/messages/batches/"+id), `"processing_status":"ended"`) }) {
		t.Fatalf("never ended: %s", s.get("/v1/messages/batches/"+id))
	}
	res := s.get("/v1/messages/batches/" + id + "/results")
	if !strings.Contains(res, `"custom_id":"a1"`) || strings.Contains(res, c.Value) || !strings.Contains(res, "[REDACTED") {
		t.Fatalf("results: %s", res)
	}
}

// TestBatchPassthroughSettlesWithoutAPoll: the batch worker polls an open
// passed-through batch no client asks about, and settles it once it ended.
func TestBatchPassthroughSettlesWithoutAPoll(t *testing.T) {
	s := newPassthroughSetup(t)
	createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+messageItem("w1", "claude", 10)+`]}`)))
	s.fake.Finish()
	if !testwait.Until(func() bool { return len(s.batchRecords(t)) == 1 }) {
		t.Fatalf("no record without a poll: %+v", s.batchRecords(t))
	}
}

// TestBatchPassthroughProviderRefusal: a provider that refuses the batch
// (here the deployment's key) is a 502 naming it, never the key, and the
// batch's hold is given back at once.
func TestBatchPassthroughProviderRefusal(t *testing.T) {
	s := newPassthroughSetup(t)
	big := func(n int) []byte {
		var parts []string
		for i := range n {
			parts = append(parts, messageItem("q"+strconv.Itoa(i), "claude", 100000))
		}
		return []byte(`{"requests":[` + strings.Join(parts, ",") + `]}`)
	}
	s.fake.SetKey("sk-rotated")
	rr := s.send(http.MethodPost, "/v1/messages/batches", "", big(4))
	if rr.Code != http.StatusBadGateway || !strings.Contains(rr.Body.String(), "401") || strings.Contains(rr.Body.String(), "sk-upstream-secret") {
		t.Fatalf("provider refusal: %d %s", rr.Code, rr.Body)
	}
	s.fake.SetKey("sk-upstream-secret")
	// $4.50 of $5 fits only if the refused batch's $3 was given back.
	createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", big(6)))
}

// TestBatchPassthroughSettlesUnderItsAdmission (H11-F1): a batch settles
// with the workspace, person and groups it was admitted under, whatever
// its key is by then (a sign-in key lives 12 hours, a provider's batch
// up to 24): here the key is known by its id only at settlement.
func TestBatchPassthroughSettlesUnderItsAdmission(t *testing.T) {
	s := newPassthroughSetup(t)
	s.id.Workspace, s.id.Owner, s.id.Groups = "ws-eng", "carol@example.com", "eng\nml"
	recs := s.settleOne(t, `{"requests":[`+messageItem("ok-1", "claude", 100)+`]}`)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if r := recs[0]; r.Workspace != "ws-eng" || r.KeyID != "bob" || r.CostPicoUSD != discountedItemPico {
		t.Fatalf("record workspace %q key %q cost %d; want the workspace the batch was admitted under", r.Workspace, r.KeyID, r.CostPicoUSD)
	}
	// The person's and groups' spend count it, as their budgets read it.
	spend, err := s.st.(ledger.SpendStore).CurrentSpend(t.Context(), time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sp := range spend {
		if sp.Period == "total" {
			got[sp.Scope+" "+sp.ScopeID] = sp.SpentPico
		}
	}
	for _, k := range []string{ledger.ScopeWorkspace + " ws-eng", ledger.ScopeUser + " carol@example.com", ledger.ScopeGroup + " eng", ledger.ScopeGroup + " ml"} {
		if got[k] != discountedItemPico {
			t.Errorf("spend of %s: %d, want %d (all: %v)", k, got[k], discountedItemPico, got)
		}
	}
}

// TestBatchPassthroughOneHourCacheWrites (H11-F3): cache writes the
// provider says were one-hour writes are recorded and priced as such,
// read as the interactive path reads Anthropic's usage.
func TestBatchPassthroughOneHourCacheWrites(t *testing.T) {
	s := newPassthroughSetup(t, "  cache_creation_input_token_cost: 0.00000375")
	s.fake.SetAnthropicUsage(`{"input_tokens":10,"output_tokens":10,"cache_creation_input_tokens":100000,"cache_creation":{"ephemeral_5m_input_tokens":0,"ephemeral_1h_input_tokens":100000}}`)
	recs := s.settleOne(t, `{"requests":[`+messageItem("ok-1", "claude", 100)+`]}`)
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	r := recs[0]
	// One-hour writes cost twice the input price ($6 a million), halved.
	want := int64((10*3_000_000 + 10*15_000_000 + 100000*6_000_000) / 2)
	if r.CacheCreation1h != 100000 || r.CacheCreation5m != 0 || r.CostPicoUSD != want {
		t.Fatalf("cache writes 5m %d 1h %d, cost %d; want 1h 100000 at %d", r.CacheCreation5m, r.CacheCreation1h, r.CostPicoUSD, want)
	}
}

// TestBatchPassthroughHoldAtTheCacheWritePrice (H11-F3): the hold prices
// a request's input at the dearest an input token may cost, a one-hour
// cache write here (twice the input price), as the priced downgrade's
// bound does: 100 kB of input held at $0.30 a request (half of $6 a
// million), so 20 do not fit in $5 while 16 do.
func TestBatchPassthroughHoldAtTheCacheWritePrice(t *testing.T) {
	s := newPassthroughSetup(t)
	items := func(n int) []byte {
		text := strings.Repeat("x", 100000)
		var parts []string
		for i := range n {
			parts = append(parts, `{"custom_id":"q`+strconv.Itoa(i)+`","params":{"model":"claude","max_tokens":1,"system":[{"type":"text","text":"`+text+`","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[{"role":"user","content":"hi"}]}}`)
		}
		return []byte(`{"requests":[` + strings.Join(parts, ",") + `]}`)
	}
	if rr := s.send(http.MethodPost, "/v1/messages/batches", "", items(20)); rr.Code != http.StatusTooManyRequests {
		t.Fatalf("20 requests held at the input price only: %d %s", rr.Code, rr.Body)
	}
	createdID(t, s.send(http.MethodPost, "/v1/messages/batches", "", items(16)))
}

// searchItem is a Message Batches request with Anthropic's web search
// tool, maxUses searches at most (none when 0).
func searchItem(id string, maxUses int) string {
	tool := `{"type":"web_search_20250305","name":"web_search"`
	if maxUses > 0 {
		tool += `,"max_uses":` + strconv.Itoa(maxUses)
	}
	return `{"custom_id":"` + id + `","params":{"model":"claude","max_tokens":100,"tools":[` + tool + `}],"messages":[{"role":"user","content":"search the news"}]}}`
}

// TestBatchPassthroughServerTools (H11-F2): a request with a server tool
// is held as content the provider fetches and bills as input (at the
// context window) plus its searches' fees (max_uses at $10 a thousand,
// not discounted), and the searches the provider ran are charged at
// settlement.
func TestBatchPassthroughServerTools(t *testing.T) {
	s := newPassthroughSetup(t, "  max_input_tokens: 200000")
	// 200k tokens of input at $6 a million (a one-hour cache write, the
	// dearest an input token costs), halved, is $0.60 a request, and 5
	// searches $0.05: 8 do not fit in $5 ($5.21); held at their bytes
	// they would.
	items := func(n int) []byte {
		var parts []string
		for i := range n {
			parts = append(parts, searchItem("s"+strconv.Itoa(i), 5))
		}
		return []byte(`{"requests":[` + strings.Join(parts, ",") + `]}`)
	}
	if rr := s.send(http.MethodPost, "/v1/messages/batches", "", items(8)); rr.Code != http.StatusTooManyRequests {
		t.Fatalf("8 search requests held at their bytes: %d %s", rr.Code, rr.Body)
	}
	s.fake.SetAnthropicUsage(`{"input_tokens":40000,"output_tokens":100,"server_tool_use":{"web_search_requests":5}}`)
	recs := s.settleOne(t, string(items(1)))
	want := int64((40000*3_000_000+100*15_000_000)/2) + 5*10_000_000_000
	if len(recs) != 1 || recs[0].CostPicoUSD != want {
		t.Fatalf("records %+v; want one at %d pico, the searches' fees included", recs, want)
	}
}

// TestBatchPassthroughSecretCustomID (H11-F5): a custom_id that is a
// credential is refused before a batch is passed through, under redact
// as under block: the provider never sees it (an id cannot be redacted,
// it comes back as sent).
func TestBatchPassthroughSecretCustomID(t *testing.T) {
	pat := secrettest.Corpus(5)[8].Value
	for _, action := range []string{"redact", "block"} {
		s := newPassthroughSetup(t, "secrets: {action: "+action+"}")
		rr := s.send(http.MethodPost, "/v1/messages/batches", "", []byte(`{"requests":[`+messageItem("clean", "claude", 10)+`,`+messageItem(pat, "claude", 10)+`]}`))
		if rr.Code != http.StatusBadRequest || !strings.Contains(rr.Body.String(), "request 1") || strings.Contains(rr.Body.String(), pat) {
			t.Fatalf("%s: secret custom_id: %d %s", action, rr.Code, rr.Body)
		}
		if n, _ := s.fake.Creates(); n != 0 {
			t.Fatalf("%s: the provider got a batch whose custom_id is a credential", action)
		}
	}
}
