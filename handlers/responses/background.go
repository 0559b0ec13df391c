package responses

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// A Responses request with background: true is answered at once with the
// Response in status queued; the gateway then serves it as an ordinary
// streamed request on a context detached from the client's connection,
// through the same path (auth identity, budgets, limits, alias timeout,
// fallbacks, ledger: one record, with its real usage and outcome). Its
// events are kept in memory while it runs, so GET ?stream=true on the
// instance running it replays them with their original sequence numbers
// and then follows the live tail. The stored row (every instance on the
// ledger database reads it) goes queued → in_progress → its final status.
//
// Cancel stops the upstream call by cancelling that context. Another
// instance cannot reach the context, so it marks the stored row
// cancelled; the instance running it reads its row every poll and stops
// when it sees that.

// poll is how often a running background response checks its stored row
// for a cancel from another instance.
const poll = time.Second

// lease is how long a background response's stored row stays claimed by
// the instance running it without a renewal; that instance renews it
// every renew. A row whose lease lapsed was left by an instance that
// stopped (crashed, killed, lost its database): the next instance to read
// it marks it failed, so pollers end within lease of the crash.
const (
	lease = 15 * time.Second
	renew = 5 * time.Second
)

// maxSweep bounds the responses one sweep settles; the next takes the
// rest.
const maxSweep = 100

// Queue stores a background response's queued Response under its lease,
// before its run starts.
func (s *State) Queue(ctx context.Context, run *Run, alias string, queued json.RawMessage) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	return s.store().PutResponse(ctx, ledger.StoredResponse{ID: run.ID, KeyID: run.Key, Model: alias, Created: time.Unix(run.Created, 0),
		Response: queued, LeaseUntil: s.Now().Add(lease)})
}

// Begin moves run's stored row from queued to in_progress (every instance
// polling it says so from now) and watches the row for a cancel from
// another instance while the run goes on.
func (s *State) Begin(run *Run) {
	go s.watchCancel(run)
	s.markInProgress(run)
}

// markInProgress moves run's stored row from queued to in_progress.
func (s *State) markInProgress(run *Run) {
	rs := s.store()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	stored, err := rs.GetResponse(ctx, run.Key, run.ID)
	if err != nil || StoredStatus(stored.Response) != "queued" {
		return
	}
	var cur map[string]json.RawMessage
	if json.Unmarshal(stored.Response, &cur) != nil {
		return
	}
	cur["status"] = json.RawMessage(`"in_progress"`)
	stored.Response, _ = json.Marshal(cur)
	stored.LeaseUntil = s.Now().Add(lease)
	_ = rs.PutResponse(ctx, stored)
}

// watchCancel stops run when another instance marked its stored row
// cancelled, and renews the row's lease while the run goes on.
func (s *State) watchCancel(run *Run) {
	rs := s.store()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	renewal := time.NewTicker(renew)
	defer renewal.Stop()
	for {
		select {
		case <-run.done:
			return
		case <-renewal.C:
			ctx, cancel := context.WithTimeout(context.Background(), Timeout)
			_ = rs.RenewResponse(ctx, run.Key, run.ID, s.Now().Add(lease))
			cancel()
			continue
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		stored, err := rs.GetResponse(ctx, run.Key, run.ID)
		cancel()
		if err == nil && StoredStatus(stored.Response) == "cancelled" {
			run.Stop()
			return
		}
	}
}

// Settle leaves a run's final state in the store once its call is
// served into out. A turn that completed stored its Response itself;
// anything else (cancelled, failed, an error answer) is written here.
func (s *State) Settle(run *Run, out *RunSink) {
	rs := s.store()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	stored, err := rs.GetResponse(ctx, run.Key, run.ID)
	if err != nil {
		return
	}
	var cur map[string]json.RawMessage
	if json.Unmarshal(stored.Response, &cur) != nil {
		return
	}
	var status string
	_ = json.Unmarshal(cur["status"], &status)
	cancelled := run.Cancelled()
	switch {
	case status != "queued" && status != "in_progress" && !(cancelled && status != "cancelled"):
		return
	case cancelled || status == "cancelled":
		if status == "completed" || status == "incomplete" {
			// It finished before the cancel reached it.
			return
		}
		cur["status"] = json.RawMessage(`"cancelled"`)
	default:
		cur["status"] = json.RawMessage(`"failed"`)
		cur["error"] = out.failure()
	}
	b, _ := json.Marshal(cur)
	stored.Response, stored.LeaseUntil = b, time.Time{}
	if err := rs.PutResponse(ctx, stored); err != nil {
		s.report(stored.Model, "response_store: "+err.Error())
	}
}

// SettleLapsed is stored as it is now: a background response still
// queued or in_progress whose lease lapsed was left by an instance that
// stopped, and is marked failed here (once, whichever instance reads it
// first), so that pollers end.
func (s *State) SettleLapsed(ctx context.Context, rs ledger.ResponseStore, stored ledger.StoredResponse) ledger.StoredResponse {
	if stored.LeaseUntil.IsZero() || !s.Now().After(stored.LeaseUntil) || s.Runs.Get(stored.KeyID, stored.ID) != nil {
		return stored
	}
	b := stored.Response
	if st := StoredStatus(stored.Response); st == "queued" || st == "in_progress" {
		var cur map[string]json.RawMessage
		if json.Unmarshal(stored.Response, &cur) != nil {
			return stored
		}
		cur["status"] = json.RawMessage(`"failed"`)
		cur["error"] = json.RawMessage(`{"code":"server_error","message":"the gateway instance running this background response stopped before it finished; create the response again"}`)
		b, _ = json.Marshal(cur)
	}
	// A finished one (cancelled from another instance while its own was
	// gone) only loses the lease, so the sweep does not find it again.
	done, err := rs.ReplaceLapsed(ctx, stored.KeyID, stored.ID, stored.LeaseUntil, b)
	switch {
	case err != nil:
		return stored
	case !done:
		// Renewed, finished or failed by another reader meanwhile.
		if now, err := rs.GetResponse(ctx, stored.KeyID, stored.ID); err == nil {
			return now
		}
		return stored
	}
	stored.Response, stored.LeaseUntil = b, time.Time{}
	return stored
}

// SweepLapsed marks failed, every lease, the background responses whose
// instance stopped and that no one has read since, so that the store
// says what became of them; until ctx ends.
func (s *State) SweepLapsed(ctx context.Context) { s.SweepLapsedEvery(ctx, lease) }

// SweepLapsedEvery is SweepLapsed at its own period.
func (s *State) SweepLapsedEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rs := s.store()
		if rs == nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, Timeout)
		lapsed, _ := rs.LapsedResponses(sctx, s.Now(), maxSweep)
		for _, stored := range lapsed {
			s.SettleLapsed(sctx, rs, stored)
		}
		cancel()
	}
}

// Cancel cancels the stored background response of the calling key and
// is the Response to answer with: the run here stops and is waited for
// (within ctx); a run on another instance is marked, and that instance
// stops its call when it reads the mark (poll).
func (s *State) Cancel(ctx context.Context, rs ledger.ResponseStore, stored ledger.StoredResponse) (json.RawMessage, *providers.APIError) {
	var head struct {
		Status     string `json:"status"`
		Background bool   `json:"background"`
	}
	_ = json.Unmarshal(stored.Response, &head)
	if !head.Background {
		return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "response_id", Code: "invalid_request",
			Message: fmt.Sprintf("Response %q was not created with background=true and cannot be cancelled.", stored.ID)}
	}
	switch head.Status {
	case "cancelled":
		// Cancelling again answers the cancelled Response.
		return stored.Response, nil
	case "queued", "in_progress":
	default:
		return nil, &providers.APIError{Status: http.StatusBadRequest, Param: "response_id", Code: "invalid_request",
			Message: fmt.Sprintf("Cannot cancel a response in status %s; only a queued or in_progress background response can be cancelled.", head.Status)}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	if run := s.Runs.Get(stored.KeyID, stored.ID); run != nil {
		run.Stop()
		select {
		case <-run.done:
		case <-ctx.Done():
		}
	} else {
		var cur map[string]json.RawMessage
		_ = json.Unmarshal(stored.Response, &cur)
		cur["status"] = json.RawMessage(`"cancelled"`)
		stored.Response, _ = json.Marshal(cur)
		if err := rs.PutResponse(ctx, stored); err != nil {
			return nil, Unavailable(err)
		}
		return stored.Response, nil
	}
	now, err := rs.GetResponse(ctx, stored.KeyID, stored.ID)
	if err != nil {
		return nil, Unavailable(err)
	}
	return now.Response, nil
}
