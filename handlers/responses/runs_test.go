package responses

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/apierror"
)

// TestBGRunsPerKey: a key runs at most max background responses at once;
// a finished one frees its slot, other keys are counted apart, and a run
// is found only under its own key.
func TestBGRunsPerKey(t *testing.T) {
	b := NewRuns()
	runs := []*Run{{ID: "r1", Key: "a"}, {ID: "r2", Key: "a"}, {ID: "r3", Key: "a"}}
	if !b.Start(runs[0], 2) || !b.Start(runs[1], 2) {
		t.Fatal("two runs under a limit of two refused")
	}
	if b.Start(runs[2], 2) {
		t.Fatal("a third run under a limit of two started")
	}
	if !b.Start(&Run{ID: "r4", Key: "b"}, 2) {
		t.Fatal("another key's run refused")
	}
	if b.Get("b", "r1") != nil || b.Get("a", "r1") != runs[0] {
		t.Fatal("runs are not scoped to their key")
	}
	b.Finish(runs[0])
	if b.Get("a", "r1") != nil || !b.Start(runs[2], 2) {
		t.Fatal("a finished run kept its slot")
	}
	b.Finish(runs[1])
	b.Finish(runs[2])
	if len(b.perKey) != 1 || len(b.runs) != 1 {
		t.Fatalf("finished keys left behind: %v %v", b.perKey, b.runs)
	}
}

// TestRunSinkKeepsEventsForReplay: a run's streamed answer is kept event
// by event (split writes, CRLF lines and [DONE] included), and a replay
// after a sequence number sends the rest with their event names, then
// ends when the run does; an error answer is kept for the failed
// Response's error instead.
func TestRunSinkKeepsEventsForReplay(t *testing.T) {
	run := NewRun("resp_1", "k", 1, func() {})
	out := NewRunSink(run)
	out.Header().Set("Content-Type", "text/event-stream")
	out.Start(http.StatusOK)
	stream := "event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0}\n\n" +
		"event: response.output_text.delta\r\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1}\r\n\n" +
		"data: {\"type\":\"response.completed\",\"sequence_number\":2}\n\ndata: [DONE]\n\n"
	for i := 0; i < len(stream); i += 7 {
		_ = out.Write([]byte(stream[i:min(i+7, len(stream))]))
	}
	run.End()
	var got recorderOut
	if !run.Replay(context.Background(), &got, 0) {
		t.Fatal("replay refused a run that kept every event")
	}
	want := "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":1}\n\n" +
		"event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":2}\n\n"
	if got.body.String() != want || got.status != http.StatusOK || got.h.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("replay after 0: %d %v\n%s", got.status, got.h, got.body.String())
	}

	failed := NewRunSink(NewRun("resp_2", "k", 1, func() {}))
	failed.Fail(&apierror.Error{Status: http.StatusTooManyRequests, Code: "rate_limit_exceeded", Message: "slow down"})
	var e struct{ Code, Message string }
	if err := json.Unmarshal(failed.failure(), &e); err != nil || e.Code != "rate_limit_exceeded" || e.Message != "slow down" {
		t.Fatalf("failure: %s (%v)", failed.failure(), err)
	}
}

// recorderOut is an Out that keeps what a replay writes.
type recorderOut struct {
	h      http.Header
	status int
	body   bytes.Buffer
}

func (o *recorderOut) Header() http.Header {
	if o.h == nil {
		o.h = http.Header{}
	}
	return o.h
}
func (o *recorderOut) Start(status int)     { o.status = status }
func (o *recorderOut) Write(p []byte) error { o.body.Write(p); return nil }
func (o *recorderOut) Flush() error         { return nil }
