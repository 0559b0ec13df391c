package integration

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// batchModels spread a batch over both local backends (echo, a fake
// Ollama) and both provider fakes (Anthropic, OpenAI).
const batchModels = "echo,llama,claude,oa"

type batchRun struct {
	AnthropicCreated  string
	AnthropicCounts   map[string]int
	AnthropicResults  []struct{ ID, Type, Text string }
	AnthropicListed   bool
	AnthropicCancel   string
	AnthropicCanceled int
	AnthropicDeleted  string
	AnthropicAfter    string `json:"anthropicAfterDelete"`
	OpenaiFile        struct {
		Purpose string
		Bytes   int
	}
	OpenaiStatus   string
	OpenaiCounts   map[string]int
	OpenaiMetadata map[string]string
	OpenaiOutput   []struct {
		ID     string
		Status int
		Text   string
	}
	OpenaiListed        bool
	OpenaiCancel        string
	OpenaiCancelled     map[string]int
	OpenaiCancelledLine string
	OpenaiWrongEndpoint string
}

// runBatchScript runs testdata/batches.mjs creating on baseA and polling
// on baseB, and checks what the SDKs saw.
func runBatchScript(t *testing.T, baseA, baseB, releaseURL string) {
	t.Helper()
	dir, node := testbin.NodeSDKs(t)
	installScript(t, dir, "batch_poll.mjs")
	run := installScript(t, dir, "batches.mjs")
	out := runNode(t, dir, node, run, "MODELGATE_BASE_A="+baseA, "MODELGATE_BASE_B="+baseB,
		"MODELGATE_API_KEY="+aliceKey, "MODELGATE_MODELS="+batchModels, "MODELGATE_HOLD=held", "MODELGATE_RELEASE="+releaseURL)
	var res batchRun
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("script output: %v: %s", err, out)
	}
	// Four requests on the aliases, and one named through model_aliases.
	if res.AnthropicCreated != "in_progress" || res.AnthropicCounts["succeeded"] != 5 || len(res.AnthropicResults) != 5 {
		t.Errorf("anthropic batch: %s", out)
	}
	for i, r := range res.AnthropicResults {
		want := fakes.DefaultReply
		if i < 2 && r.Text != "" { // the local backends answer their own words
			want = r.Text
		}
		if r.Type != "succeeded" || r.Text != want || r.ID != "item-"+string(rune('0'+i)) {
			t.Errorf("anthropic result %d: %+v", i, r)
		}
	}
	if !res.AnthropicListed || res.AnthropicCancel != "canceling" || res.AnthropicCanceled == 0 ||
		res.AnthropicDeleted != "message_batch_deleted" || res.AnthropicAfter != "404 not_found_error" {
		t.Errorf("anthropic list/cancel/delete: %s", out)
	}
	if res.OpenaiFile.Purpose != "batch" || res.OpenaiFile.Bytes == 0 || res.OpenaiStatus != "completed" ||
		res.OpenaiCounts["completed"] != 4 || res.OpenaiCounts["total"] != 4 || res.OpenaiMetadata["job"] != "nightly" || len(res.OpenaiOutput) != 4 {
		t.Errorf("openai batch: %s", out)
	}
	for i, o := range res.OpenaiOutput {
		if o.Status != 200 || o.Text == "" || o.ID != "line-"+string(rune('0'+i)) || (i >= 2 && o.Text != fakes.DefaultReply) {
			t.Errorf("openai output %d: %+v", i, o)
		}
	}
	if !res.OpenaiListed || res.OpenaiCancel != "cancelling" || res.OpenaiCancelled["failed"] == 0 ||
		res.OpenaiCancelled["total"] != 200 || res.OpenaiCancelledLine != "batch_cancelled" ||
		!strings.HasPrefix(res.OpenaiWrongEndpoint, "400 invalid_request_error input_file_id") {
		t.Errorf("openai list/cancel/refusal: %s", out)
	}
}

// TestBatchesOfficialSDKs: the official Anthropic and OpenAI SDKs' batch
// calls against the binary, each batch spread over local backends (echo,
// a fake Ollama) and provider fakes; every item is a usage record of the
// key labelled "batch".
func TestBatchesOfficialSDKs(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	held := heldUpstream(t)
	g := startGateway(t, gatewayConfig{models: withHeld(u, held.URL)})
	runBatchScript(t, g.base, g.base, held.URL+"/release")
	perAlias := map[string]int{}
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint == ledger.EndpointBatch && rec.KeyID == "alice" && rec.Status == 200 {
			perAlias[rec.Alias]++
		}
	}
	// Two full batches (4 items each) and the cancelled ones' items that
	// ran before the cancel reached them.
	for _, alias := range strings.Split(batchModels, ",") {
		if perAlias[alias] < 2 {
			t.Errorf("alias %s: %d batch records (%v)", alias, perAlias[alias], perAlias)
		}
	}
}

// TestBatchesTwoInstancesPostgres: two gateway processes on one
// PostgreSQL ledger; every batch is created on A and polled, listed,
// cancelled and read on B.
func TestBatchesTwoInstancesPostgres(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	u := startUpstreams(t, fakes.Options{})
	held := heldUpstream(t)
	cfg := gatewayConfig{models: withHeld(u, held.URL), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	runBatchScript(t, a.base, b.base, held.URL+"/release")
}

// heldUpstream is an OpenAI-compatible fake that holds each request whose
// body says "hold-N" until GET /release?n=N (or the request ends), so a
// batch on it is still running when the script cancels it.
func heldUpstream(t *testing.T) *httptest.Server {
	answer := fakes.OpenAI(fakes.Options{}, &fakes.Recorder{})
	var mu sync.Mutex
	gates := map[string]chan struct{}{}
	gate := func(n string) chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		if gates[n] == nil {
			gates[n] = make(chan struct{})
		}
		return gates[n]
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/release" {
			ch := gate(r.URL.Query().Get("n"))
			mu.Lock()
			select {
			case <-ch:
			default:
				close(ch)
			}
			mu.Unlock()
			return
		}
		body, _ := io.ReadAll(r.Body)
		if i := bytes.Index(body, []byte("hold-")); i >= 0 && i+6 <= len(body) {
			select {
			case <-gate(string(body[i+5 : i+6])):
			case <-r.Context().Done():
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		answer.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// withHeld is the harness's models file with the alias "held" on base.
func withHeld(u *upstreams, base string) string {
	return strings.Replace(u.modelsYAML(), "model_aliases:", heldModel(base)+"model_aliases:", 1)
}

// heldModel is the models-file entry of the alias "held".
func heldModel(base string) string {
	return "  - model_name: held\n    proxy_params:\n      model: openai/held\n      api_base: " + base + "/v1\n      api_key: held-secret\n"
}
