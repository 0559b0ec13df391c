package batch

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// restoring is a Passthrough that only hears restored holds.
type restoring struct {
	mu       sync.Mutex
	restored map[uint64]string
	ids      map[uint64]policy.Identity
}

func (p *restoring) Plan(context.Context, *policy.Identity, string, []Request) (*Plan, *apierror.Error) {
	return nil, nil
}
func (p *restoring) Upstream(string) (Upstream, bool) { return Upstream{}, false }
func (p *restoring) Hold(context.Context, *policy.Identity, uint64, int64, time.Time) *apierror.Error {
	return nil
}
func (p *restoring) Release(context.Context, uint64) {}
func (p *restoring) Restore(id *policy.Identity, ticket uint64, pico int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.restored[ticket] = id.KeyID + " " + itoa(int(pico))
	if p.ids != nil {
		p.ids[ticket] = *id
	}
}

// restoredAtStart stores an open passed-through batch of alice's with
// models as its stored plan, starts a service whose Identify is
// identify, and returns the identity its hold (ticket 42, 9000 pico) was
// counted again under.
func restoredAtStart(t *testing.T, models json.RawMessage, identify func(string) (*policy.Identity, *apierror.Error)) policy.Identity {
	t.Helper()
	st := sqliteStore(t)
	ps := st.(ledger.BatchPassthroughStore)
	now := time.Now().UTC()
	b := ledger.Batch{ID: "msgbatch_open", Site: "site", KeyID: "alice", API: apiAnthropic, Endpoint: "/v1/messages", Created: now, Expires: now.Add(completionWindow)}
	row := ledger.BatchPassthrough{BatchID: b.ID, Site: "site", KeyID: "alice", Provider: apiAnthropic, Upstream: "gone",
		ProviderBatchID: "msgbatch_up", Models: models, HoldTicket: 42, HoldPico: 9000, Status: "in_progress", Polled: now}
	if err := ps.CreatePassthroughBatch(context.Background(), b, []ledger.BatchItem{{ID: "i", CustomID: "c", Body: []byte(`{}`)}}, row); err != nil {
		t.Fatal(err)
	}
	p := &restoring{restored: map[uint64]string{}, ids: map[uint64]policy.Identity{}}
	s := New(Options{Store: func() ledger.BatchStore { return st }, Runner: newRunner(), Site: "site", Passthrough: p, Identify: identify})
	s.Start()
	t.Cleanup(s.Close)
	if !testwait.Until(func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.restored[42] == "alice 9000"
	}) {
		t.Fatalf("restored %v", p.restored)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ids[42]
}

// TestPassthroughHoldsRestoredAtStart: an instance that starts finds its
// site's open passed-through batches and counts their holds again (a
// batch stored before the gateway kept whom it was admitted as: as the
// key stands now): a hold kept in a process's memory (SQLite) outlives
// the process that made it.
func TestPassthroughHoldsRestoredAtStart(t *testing.T) {
	id := restoredAtStart(t, json.RawMessage(`{}`), func(keyID string) (*policy.Identity, *apierror.Error) {
		return &policy.Identity{KeyID: keyID, Workspace: "now"}, nil
	})
	if id.Workspace != "now" {
		t.Fatalf("restored as %+v, want the key as it stands", id)
	}
}

// TestPassthroughHoldRestoredAsAdmitted (H11-F1): after a restart, an
// open batch's hold is counted again against the scopes it was admitted
// under even when its key is no longer active (Identify refuses it).
func TestPassthroughHoldRestoredAsAdmitted(t *testing.T) {
	models, _ := json.Marshal(storedModels{Admitted: admittedOf(&policy.Identity{KeyID: "alice", Workspace: "ws", Owner: "alice@example.com", Groups: "eng",
		Limits: ledger.Limits{BudgetCents: ledger.Cents(100), BudgetPeriod: "monthly"}})})
	id := restoredAtStart(t, models, func(string) (*policy.Identity, *apierror.Error) {
		return nil, &apierror.Error{Status: 401, Message: "the key is inactive"}
	})
	if id.Workspace != "ws" || id.PersonID() != "alice@example.com" || id.Groups != "eng" || id.Limits.BudgetCents == nil || *id.Limits.BudgetCents != 100 {
		t.Fatalf("restored as %+v, want as admitted", id)
	}
}
