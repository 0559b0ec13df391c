package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/modelgate/modelgate/internal/fakes"
)

// slowChat is an OpenAI chat upstream that streams words one per gap, so
// a background response is still running when the test acts on it; it
// notes when a caller hangs up before the end (the gateway cancelled the
// call).
type slowChat struct {
	srv     *httptest.Server
	dropped chan struct{} // one value per request whose caller hung up
	started atomic.Int32
}

func startSlowChat(t *testing.T, words int, gap time.Duration) *slowChat {
	s := &slowChat{dropped: make(chan struct{}, 16)}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.started.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		send := func(chunk string) {
			fmt.Fprintf(w, "data: %s\n\n", chunk)
			_ = rc.Flush()
		}
		head := `{"id":"chatcmpl-slow","object":"chat.completion.chunk","created":1,"model":"slow-gpt","choices":[`
		send(head + `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
		for i := range words {
			select {
			case <-r.Context().Done():
				s.dropped <- struct{}{}
				return
			case <-time.After(gap):
			}
			send(head + fmt.Sprintf(`{"index":0,"delta":{"content":"w%d "},"finish_reason":null}]}`, i))
		}
		send(head + `{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":` + fmt.Sprint(words) + `,"total_tokens":` + fmt.Sprint(5+words) + `}}`)
		send("[DONE]")
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *slowChat) modelsYAML() string {
	return fmt.Sprintf(`model_list:
  - model_name: slow
    proxy_params:
      model: openai/slow-gpt
      api_base: %s/v1
      api_key: upstream-secret
`, s.srv.URL)
}

// waitResponseStatus polls a response until its status is one of want.
func waitResponseStatus(t *testing.T, c openai.Client, id string, want ...string) *responses.Response {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		r, err := c.Responses.Get(context.Background(), id, responses.ResponseGetParams{})
		if err != nil {
			t.Fatalf("get %s: %v", id, err)
		}
		for _, w := range want {
			if string(r.Status) == w {
				return r
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("response %s is %s after 20s, want %v", id, r.Status, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestResponsesBackground: through the openai SDK, background: true
// answers queued at once, runs to completion detached from the request,
// is polled with retrieve and followed with retrieve-stream (the original
// events, their sequence numbers); cancel stops the upstream call (the
// upstream sees its caller hang up) and answers cancelled; cancelling
// again answers the cancelled response, cancelling a finished one is a
// 400; the ledger holds one record per background response with its
// real outcome and usage.
func TestResponsesBackground(t *testing.T) {
	up := startSlowChat(t, 8, 100*time.Millisecond)
	g := startGateway(t, gatewayConfig{models: up.modelsYAML()})
	alice := openaiClient(g, aliceKey)
	ctx := context.Background()
	input := responses.ResponseNewParamsInputUnion{OfString: openai.String("Count slowly")}

	// Polled to completion.
	first, err := alice.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if first.Status != "queued" || !first.Background || !strings.HasPrefix(first.ID, "resp_") {
		t.Fatalf("background create answered status %q background %v id %q, want queued", first.Status, first.Background, first.ID)
	}
	done := waitResponseStatus(t, alice, first.ID, "completed", "failed", "cancelled")
	if done.Status != "completed" || done.OutputText() != "w0 w1 w2 w3 w4 w5 w6 w7 " || !done.Background || done.Usage.OutputTokens != 8 {
		t.Fatalf("background response ended %s %q background %v usage %+v", done.Status, done.OutputText(), done.Background, done.Usage)
	}
	if _, err := alice.Responses.Cancel(ctx, first.ID); !isStatus(err, http.StatusBadRequest) {
		t.Errorf("cancel of a completed background response: %v, want 400", err)
	}

	// Followed live: retrieve-stream right after create gets every event
	// of the run, numbered as the run numbered them.
	second, err := alice.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	s := alice.Responses.GetStreaming(ctx, second.ID, responses.ResponseGetParams{})
	var evs []responses.ResponseStreamEventUnion
	for s.Next() {
		evs = append(evs, s.Current())
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for i, ev := range evs {
		if ev.SequenceNumber != int64(i) {
			t.Errorf("live event %d (%s) has sequence number %d", i, ev.Type, ev.SequenceNumber)
		}
		if ev.Type == "response.output_text.delta" {
			text.WriteString(ev.Delta)
		}
	}
	if len(evs) < 10 || evs[0].Type != "response.created" || evs[len(evs)-1].Type != "response.completed" || text.String() != "w0 w1 w2 w3 w4 w5 w6 w7 " {
		t.Fatalf("live retrieve-stream gave %v text %q", eventTypes(evs), text.String())
	}
	if evs[len(evs)-1].Response.ID != second.ID {
		t.Errorf("completed event names %s, want %s", evs[len(evs)-1].Response.ID, second.ID)
	}

	// Cancelled mid-run.
	third, err := alice.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	waitResponseStatus(t, alice, third.ID, "in_progress")
	cancelled, err := alice.Responses.Cancel(ctx, third.ID)
	if err != nil {
		t.Fatal(err)
	}
	if cancelled.Status != "cancelled" || cancelled.ID != third.ID {
		t.Errorf("cancel answered %s %s, want cancelled", cancelled.ID, cancelled.Status)
	}
	select {
	case <-up.dropped:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream call went on after cancel")
	}
	if again, err := alice.Responses.Cancel(ctx, third.ID); err != nil || again.Status != "cancelled" {
		t.Errorf("second cancel: %v %v, want the cancelled response", again, err)
	}
	if got := waitResponseStatus(t, alice, third.ID, "cancelled", "completed"); got.Status != "cancelled" {
		t.Errorf("after cancel, retrieve says %s", got.Status)
	}
	// Another key sees none of it.
	admin := openaiClient(g, adminKey)
	if _, err := admin.Responses.Cancel(ctx, third.ID); !isStatus(err, http.StatusNotFound) {
		t.Errorf("another key's cancel: %v, want 404", err)
	}
	// background needs store.
	_, err = alice.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true), Store: openai.Bool(false)})
	if !isStatus(err, http.StatusBadRequest) {
		t.Errorf("background with store false: %v, want 400", err)
	}

	if n := up.started.Load(); n != 3 {
		t.Errorf("upstream saw %d calls, want 3 (one per background response)", n)
	}
	byOutcome := map[string]int{}
	var okTokens int64
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint == "responses" && rec.KeyID == "alice" {
			byOutcome[string(rec.Outcome)]++
			if rec.Outcome == "ok" {
				okTokens += rec.OutputTokens
			}
		}
	}
	if byOutcome["ok"] != 2 || byOutcome["cancelled"] != 1 || len(byOutcome) != 2 || okTokens != 16 {
		t.Errorf("ledger records by outcome %v, output tokens of the ok ones %d; want 2 ok (16 tokens) and 1 cancelled", byOutcome, okTokens)
	}
}

// TestResponsesBackgroundLimit: a key may run DefaultMaxBackgroundPerKey
// (8) background responses at once on one instance; the next
// is a 429 naming the limit, and another key is unaffected.
func TestResponsesBackgroundLimit(t *testing.T) {
	up := startSlowChat(t, 50, 100*time.Millisecond)
	g := startGateway(t, gatewayConfig{models: up.modelsYAML()})
	alice := openaiClient(g, aliceKey)
	ctx := context.Background()
	input := responses.ResponseNewParamsInputUnion{OfString: openai.String("Count slowly")}
	var ids []string
	for range 8 {
		r, err := alice.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	_, err := alice.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)},
		option.WithMaxRetries(0))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || !strings.Contains(apiErr.Message, "background") {
		t.Errorf("ninth background response: %v, want 429 naming the background limit", err)
	}
	admin := openaiClient(g, adminKey)
	if _, err := admin.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)}); err != nil {
		t.Errorf("another key's background response: %v", err)
	}
	for _, id := range ids {
		if _, err := alice.Responses.Cancel(ctx, id); err != nil {
			t.Errorf("cancel %s: %v", id, err)
		}
	}
	// A slot is free again once a run ended.
	if _, err := alice.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Input: input, Background: openai.Bool(true)}); err != nil {
		t.Errorf("background response after cancels: %v", err)
	}
}

// TestResponsesBackgroundAcrossInstances: two gateways on one
// PostgreSQL: a background response created on one is polled on the
// other, cancelled from the other (the running instance stops its
// upstream call), and both then read it cancelled.
func TestResponsesBackgroundAcrossInstances(t *testing.T) {
	u, _, _ := freshSchema(t)
	// 60 s of words: the cancel has ample time to reach the run even on a
	// loaded machine.
	up := startSlowChat(t, 600, 100*time.Millisecond)
	cfg := gatewayConfig{models: up.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + u.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	ca, cb := openaiClient(a, aliceKey), openaiClient(b, aliceKey)
	ctx := context.Background()
	r, err := ca.Responses.New(ctx, responses.ResponseNewParams{Model: "slow", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Count slowly")}})
	if err != nil {
		t.Fatal(err)
	}
	waitResponseStatus(t, cb, r.ID, "in_progress")
	got, err := cb.Responses.Cancel(ctx, r.ID)
	if err != nil || got.Status != "cancelled" {
		t.Fatalf("cancel from the other instance: %v %v", got, err)
	}
	select {
	case <-up.dropped:
	case <-time.After(20 * time.Second):
		t.Fatal("the running instance did not stop its upstream call after a cancel from the other")
	}
	for _, c := range []openai.Client{ca, cb} {
		if got := waitResponseStatus(t, c, r.ID, "cancelled", "completed", "failed"); got.Status != "cancelled" {
			t.Errorf("after cancel an instance reads %s", got.Status)
		}
	}
	// A finished run left the instance's slot free: the poll stopped.
	time.Sleep(2 * backgroundPollForTest)
	if got := waitResponseStatus(t, cb, r.ID, "cancelled", "completed", "failed"); got.Status != "cancelled" {
		t.Errorf("later the response reads %s", got.Status)
	}
}

// backgroundPollForTest is the gateway's poll for another instance's
// cancel (handlers.backgroundPoll).
const backgroundPollForTest = time.Second

func isStatus(err error, status int) bool {
	var apiErr *openai.Error
	return errors.As(err, &apiErr) && apiErr.StatusCode == status
}

// TestResponsesBackgroundOverWebSocket: background: true on the Responses
// WebSocket is an error event (400) naming the HTTP way, and the
// connection stays usable.
func TestResponsesBackgroundOverWebSocket(t *testing.T) {
	up := startSlowChat(t, 2, 10*time.Millisecond)
	g := startGateway(t, gatewayConfig{models: up.modelsYAML()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(g.base, "http")+"/v1/responses",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + aliceKey}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	send := func(frame string) {
		if err := c.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
			t.Fatal(err)
		}
	}
	read := func() map[string]any {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.Unmarshal(b, &m)
		return m
	}
	send(`{"type":"response.create","model":"slow","input":"hi","background":true}`)
	if ev := read(); ev["type"] != "error" || ev["status"] != float64(400) || !strings.Contains(fmt.Sprint(ev["error"]), "POST /v1/responses") {
		t.Fatalf("background over the WebSocket: %v", ev)
	}
	send(`{"type":"response.create","model":"slow","input":"hi"}`)
	for {
		ev := read()
		if ev["type"] == "response.completed" {
			break
		}
		if ev["type"] == "error" {
			t.Fatalf("turn after the refusal: %v", ev)
		}
	}
	if n := up.started.Load(); n != 1 {
		t.Errorf("upstream saw %d calls, want 1", n)
	}
}

// TestResponsesBackgroundEveryBackend: a background response completes
// with its own id on a chat upstream, a native Responses upstream (which
// is asked for an ordinary stream, never background) and Anthropic.
func TestResponsesBackgroundEveryBackend(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	alice := openaiClient(g, aliceKey)
	for _, model := range []string{"oa", "claude", "echo"} {
		r, err := alice.Responses.New(context.Background(), responses.ResponseNewParams{Model: model, Background: openai.Bool(true),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("Say hello")}})
		if err != nil {
			t.Fatalf("%s: %v", model, err)
		}
		start := time.Now()
		done := waitResponseStatus(t, alice, r.ID, "completed", "failed", "cancelled")
		t.Logf("%s: %s after %v", model, done.Status, time.Since(start))
		if done.Status != "completed" || done.ID != r.ID || done.OutputText() == "" || !done.Background {
			t.Errorf("%s: ended %s id %s (want %s) text %q background %v", model, done.Status, done.ID, r.ID, done.OutputText(), done.Background)
		}
	}
	for _, rec := range append(u.openaiRec.Requests(), u.anthropicRec.Requests()...) {
		if strings.Contains(string(rec.Body), `"background"`) {
			t.Errorf("an upstream was asked for background: %s", rec.Body)
		}
	}
}
