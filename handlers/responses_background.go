package handlers

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelgate/modelgate/handlers/responses"
	"github.com/modelgate/modelgate/providers"
)

// A background response (background: true) is a way in: the create is
// answered at once with its queued Response, and its run is a Call of its
// own served by the core into a responses.RunSink, which keeps the run's
// events for replay. What becomes of the run (queued, in_progress, its
// final status, a cancel from any instance, a lapsed lease) is kept by
// package responses.

// DefaultMaxBackgroundPerKey bounds the background responses one key may
// have running on one instance when GatewayOptions.MaxBackgroundPerKey is 0.
const DefaultMaxBackgroundPerKey = responses.DefaultMaxPerKey

func (g *Gateway) maxBackground() int {
	if g.opts.MaxBackgroundPerKey > 0 {
		return g.opts.MaxBackgroundPerKey
	}
	return DefaultMaxBackgroundPerKey
}

// startBackground starts serving a background request detached from the
// client and answers it with its queued Response. With stream: true it
// returns follow instead, which streams the run's events from its
// creation (response.created names the id), as OpenAI does; the run goes
// on if the client leaves, and GET ?stream=true&starting_after= resumes.
// The caller gives the request's body memory back before following, which
// lasts as long as the run.
func (g *Gateway) startBackground(ctx context.Context, c *Call, out Sink, body []byte, t *providers.ResponsesTurn) (follow func()) {
	rs := g.rstate.OpenStore()
	if rs == nil {
		out.Fail(&providers.APIError{Status: http.StatusBadRequest, Param: "background",
			Message: "background responses are kept in the gateway's responses store, and this gateway has no ledger database; send the request without background"})
		return nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		out.Fail(&providers.APIError{Status: http.StatusBadRequest, Message: "request body must be a JSON object"})
		return nil
	}
	fields["stream"] = json.RawMessage("true")
	delete(fields, "stream_options")
	inner, _ := json.Marshal(fields)

	key := responses.KeyOf(c.Identity)
	// The run keeps the request's values (trace) but not its
	// cancellation: the client may go once it has the id. Its cancel
	// exists before anyone can find the run.
	rctx, rcancel := context.WithCancel(context.WithoutCancel(ctx))
	run := responses.NewRun(t.ID, key, t.Created, rcancel)
	runs := g.rstate.Runs
	if !runs.Start(run, g.maxBackground()) {
		rcancel()
		out.Fail(&providers.APIError{Status: http.StatusTooManyRequests, RetryAfter: "5", Code: "background_limit",
			Message: fmt.Sprintf("key %q already has %d background responses running on this gateway, its limit; wait for one to finish or cancel one", key, g.maxBackground())})
		return nil
	}
	queued := t.QueuedObject()
	if err := g.rstate.Queue(ctx, run, t.Alias, queued); err != nil {
		runs.Finish(run)
		rcancel()
		out.Fail(responses.Unavailable(err))
		return nil
	}

	// The run is a call of its own: the create's, with the body that
	// streams and the run it belongs to; its caller is identified again
	// when it starts.
	rc := *c
	rc.Body, rc.source, rc.run, rc.carrierHeld, rc.req = inner, nil, run, 0, clientRequest{}
	rc.Client = c.Client.Clone()
	go g.runBackground(rctx, run, &rc)

	if t.Req.Stream {
		return func() {
			if !run.Replay(ctx, out, -1) {
				// Its events outgrew what a run keeps: the stored row.
				sctx, cancel := context.WithTimeout(ctx, responses.Timeout)
				defer cancel()
				if stored, err := rs.GetResponse(sctx, key, run.ID); err == nil {
					responses.ReplayStored(out, stored.Response, -1)
				}
			}
		}
	}
	sinkJSON(out, http.StatusOK, queued)
	return nil
}

// runBackground serves a background response's call c to its end on ctx,
// the run's, and leaves its final state in the store.
func (g *Gateway) runBackground(ctx context.Context, run *responses.Run, c *Call) {
	defer run.End()
	defer g.rstate.Runs.Finish(run)
	// It runs from now: every instance polling it says so, not queued.
	g.rstate.Begin(run)

	bw := responses.NewRunSink(run)
	// Its start is admitted as the key stands now, not as it stood at
	// the create.
	if id, refusal := c.caller.identify(); refusal != nil {
		bw.Fail(refusal)
	} else {
		c.Identity = id
		g.Serve(ctx, c, bw)
	}
	g.rstate.Settle(run, bw)
}
