package handlers

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// TestServeCallWithoutHTTP: a way in is a Call and a Sink; no
// *http.Request is made. The call is admitted, dispatched, relayed and
// recorded under the endpoint and session it names, and a refusal reaches
// the sink as an error, for the adapter to render in its own family.
func TestServeCallWithoutHTTP(t *testing.T) {
	up := newFakeUpstream(t, "up", nil)
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), nil)

	c := &Call{Format: providers.FormatOpenAI, Endpoint: ledger.EndpointBedrockInvoke, Identity: alice,
		Body: []byte(chatBody("m", false)), Session: SessionHints{Header: "s-1", Agent: "test"}}
	out := newBufferSink()
	g.Serve(context.Background(), c, out)
	if out.status != http.StatusOK || out.failed != nil {
		t.Fatalf("status %d, failed %v: %s", out.status, out.failed, out.body.String())
	}
	if got := content(t, out.body.Bytes()); got != reply("up") {
		t.Errorf("answer %q", got)
	}
	recs := obs.Records()
	if len(recs) != 1 {
		t.Fatalf("%d records", len(recs))
	}
	if r := recs[0]; r.Endpoint != ledger.EndpointBedrockInvoke || r.SessionID != "s-1" || r.Agent != "test" || r.KeyID != "alice" || r.Outcome != ledger.OutcomeOK {
		t.Errorf("record %+v", r)
	}

	c = &Call{Format: providers.FormatAnthropic, Identity: alice, Body: []byte(`{"model":"nope","max_tokens":5,"messages":[]}`)}
	out = newBufferSink()
	g.Serve(context.Background(), c, out)
	if out.failed == nil || out.failed.Status != http.StatusNotFound {
		t.Fatalf("unknown model: status %d failed %v", out.status, out.failed)
	}
	if body := string(out.failed.Body(apierror.Bedrock)); !strings.Contains(body, `"message"`) || strings.Contains(body, `"error"`) {
		t.Errorf("the adapter renders the refusal in its own family: %s", body)
	}
}

// panicSink panics when the core starts the answer.
type panicSink struct{ *bufferSink }

func (panicSink) Start(int) { panic("sink broke") }

// TestServeRecoversPanic: a panic below Serve is logged as an attempt and
// answered as a 500 on the sink, as the HTTP door's guard answers one.
func TestServeRecoversPanic(t *testing.T) {
	up := newFakeUpstream(t, "up", nil)
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), nil)
	out := panicSink{newBufferSink()}
	g.Serve(context.Background(), &Call{Format: providers.FormatOpenAI, Identity: alice, Body: []byte(chatBody("m", false))}, out)
	if out.failed == nil || out.failed.Status != http.StatusInternalServerError {
		t.Fatalf("failed %v", out.failed)
	}
	found := false
	for _, a := range obs.Attempts() {
		found = found || strings.HasPrefix(a.Err, "panic: sink broke")
	}
	if !found {
		t.Errorf("attempts %+v: no panic logged", obs.Attempts())
	}
}
