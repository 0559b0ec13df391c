package policy

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// alertSink is a team chat webhook that keeps what is posted to it.
type alertSink struct {
	mu    sync.Mutex
	posts []string
}

func (s *alertSink) count(part string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, p := range s.posts {
		if strings.Contains(p, part) {
			n++
		}
	}
	return n
}

func (s *alertSink) all() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posts...)
}

// alertingInstances are two instances on one PostgreSQL ledger whose
// alerts go, claimed in its alerts_sent table, to one chat webhook; each
// posts as it is told (no queue), so what was posted is known when a
// call returns.
func alertingInstances(t *testing.T, keyID string, cents int64) (*leaseInstance, *leaseInstance, *Identity, *alertSink) {
	t.Helper()
	_, a, b, id := twoOnOneBudget(t, keyID, cents, nil)
	sink := &alertSink{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m struct{ Text string }
		_ = json.NewDecoder(r.Body).Decode(&m)
		sink.mu.Lock()
		sink.posts = append(sink.posts, m.Text)
		sink.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	for _, in := range []*leaseInstance{a, b} {
		store := in.store.(ledger.AlertClaimer)
		al := NewAlerter(srv.URL, func() ledger.AlertClaimer { return store }, func(err error) { t.Error(err) })
		in.b.Alert = func(x BudgetAlert) { al.post(context.Background(), x) }
	}
	return a, b, id, sink
}

// write has the ledger writer of in write the records w holds, and
// tells in, as the writer does.
func (w *heldWriter) write(t *testing.T, in *leaseInstance) {
	t.Helper()
	w.mu.Lock()
	recs := w.recs
	w.recs = nil
	w.mu.Unlock()
	if err := in.store.Insert(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
	in.b.Written(recs)
}

func refresh(t *testing.T, ins ...*leaseInstance) {
	t.Helper()
	for _, in := range ins {
		if err := in.b.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Hostile D5 (b): requests alternate between two instances faster than
// either polls the other's spend, so neither sees 80 % passed by its own
// request: the refresh that reads the other's spend alerts, and the claim
// lets one post. Then the budget is spent to its limit: one 100 % alert,
// though both refuse.
func TestBudgetAlertsOnSpendOfAnotherInstance(t *testing.T) {
	a, b, id, sink := alertingInstances(t, "alternating", 10)
	cent := Estimate{InputPico: 1e10}
	wa, wb := &heldWriter{}, &heldWriter{}
	for i := range 9 {
		in, w := []*leaseInstance{a, b}[i%2], []*heldWriter{wa, wb}[i%2]
		if ok, msg := serve(t, in, w, id, cent, cent.InputPico); !ok {
			t.Fatalf("request %d refused: %s", i+1, msg)
		}
		w.write(t, in)
	}
	if n := sink.count("80% of budget"); n != 0 {
		t.Fatalf("80%% alert before either instance knew of 9 cents: %q", sink.all())
	}
	refresh(t, a, b)
	if n := sink.count("80% of budget — api key alternating: $0.09 of $0.10"); n != 1 {
		t.Errorf("%d 80%% alerts once both read 9 cents spent; want 1: %q", n, sink.all())
	}
	if ok, msg := serve(t, a, wa, id, cent, cent.InputPico); !ok {
		t.Fatalf("the last cent refused: %s", msg)
	}
	wa.write(t, a)
	refresh(t, a, b)
	for _, in := range []*leaseInstance{b, a} {
		if ok, _ := serve(t, in, &heldWriter{}, id, cent, cent.InputPico); ok {
			t.Fatal("admitted past the limit")
		}
	}
	if n := sink.count("Budget reached — api key alternating: $0.10 of $0.10 monthly spent"); n != 1 {
		t.Errorf("%d 100%% alerts; want 1: %q", n, sink.all())
	}
	if n := len(sink.all()); n != 2 {
		t.Errorf("%d alerts, want 2: %q", n, sink.all())
	}
}

// Hostile D5 (a): admission lowers the last requests' output bounds to
// what is left, and the upstream bills less input than the estimate
// counts, so spend never reaches the limit; the budget is reached when a
// request is refused with spend alone leaving less than it needs. The
// first refusal comes on the instance that has not seen the other's last
// cost (it is still on the other's lease): caused by reservations, it
// sends nothing until the cost is written and read. One alert in all.
func TestBudgetReachedWhenLoweredRequestsAreRefused(t *testing.T) {
	a, b, id, sink := alertingInstances(t, "lowered", 10)
	// A 3-cent worst case with 0.2 cents of estimated input the upstream
	// bills 0.05 cents of, and every output token it is allowed.
	est := Estimate{InputPico: 2e9, TokenPico: 1e8, Tokens: 280}
	bill := func(r *Reservation) int64 { return 5e8 + r.est.tokensFor(r.pico)*est.TokenPico }
	ins, ws := []*leaseInstance{a, b}, []*heldWriter{{}, {}}
	refusedOn := -1
	var spent int64
	for i := 0; i < 10 && refusedOn < 0; i++ {
		in, w := ins[i%2], ws[i%2]
		r, refusal := in.b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", est, time.Minute)
		if refusal != nil {
			refusedOn = i % 2
			if n := sink.count("Budget reached"); n != 0 {
				t.Errorf("refused for a cost the instance has not seen, alerted: %q", sink.all())
			}
			break
		}
		cost := bill(r)
		spent += cost
		rec := ledger.Record{Time: time.Now(), RequestID: "r", KeyID: id.KeyID, Alias: "m", Status: 200, Outcome: ledger.OutcomeOK, CostPicoUSD: cost, Ticket: r.Ticket()}
		r.Settle(cost)
		rec.Lease, rec.LeasePico = r.Lease()
		w.add(rec)
	}
	if refusedOn < 0 || spent >= 10e10 || 10e10-spent >= est.floor() {
		t.Fatalf("refused on %d at %d pico spent of 10 cents", refusedOn, spent)
	}
	ws[0].write(t, a)
	ws[1].write(t, b)
	refresh(t, a, b)
	want := "Budget reached — api key lowered: $0.09 of $0.10 monthly spent, less left than a request needs ($0.01 at least)"
	if n := sink.count(want); n != 1 {
		t.Errorf("%d alerts of %q once the costs were read: %q", n, want, sink.all())
	}
	for _, in := range ins {
		if ok, _ := serve(t, in, &heldWriter{}, id, est, 0); ok {
			t.Fatal("admitted with less left than the floor")
		}
	}
	if n := sink.count("Budget reached"); n != 1 {
		t.Errorf("%d 100%% alerts after both instances refused; want 1: %q", n, sink.all())
	}
	if n := sink.count("80% of budget"); n != 1 {
		t.Errorf("%d 80%% alerts; want 1: %q", n, sink.all())
	}
}

// An instance that passed 80 % with its own request and died before it
// posted the alert: the other instance, reading the spend, posts it.
func TestBudgetAlertOfADeadInstanceIsPosted(t *testing.T) {
	a, b, id, sink := alertingInstances(t, "dies", 10)
	var dropped []BudgetAlert
	a.b.Alert = func(x BudgetAlert) { dropped = append(dropped, x) } // queued when the process died
	cent := Estimate{InputPico: 1e10}
	wa, wb := &heldWriter{}, &heldWriter{}
	for range 7 {
		if ok, msg := serve(t, b, wb, id, cent, cent.InputPico); !ok {
			t.Fatal(msg)
		}
	}
	wb.write(t, b)
	refresh(t, a, b)
	if ok, msg := serve(t, a, wa, id, cent, cent.InputPico); !ok {
		t.Fatal(msg)
	}
	wa.write(t, a)
	if len(dropped) != 1 || dropped[0].Kind != "80" {
		t.Fatalf("a handed on %+v; want its 80%% alert", dropped)
	}
	refresh(t, b)
	if n := sink.count("80% of budget — api key dies: $0.08 of $0.10"); n != 1 {
		t.Errorf("%d 80%% alerts from the instance that lived; want 1: %q", n, sink.all())
	}
}

// On one instance: a request past the whole budget is refused without an
// alert; requests lowered to what is left leave $0.99 spent of $1, and
// the next one, needing two cents, is refused with one "Budget reached"
// that says why, however often it is refused.
func TestBudgetReachedByARefusalOnSpendAlone(t *testing.T) {
	b := NewBudgets(nil, nil)
	var got []BudgetAlert
	b.Alert = func(a BudgetAlert) { got = append(got, a) }
	dollar := int64(100)
	id := &Identity{KeyID: "one", Limits: ledger.Limits{BudgetCents: &dollar, BudgetPeriod: "daily"}}
	admit := func(est Estimate) *Reservation {
		r, _ := b.AdmitEstimate(context.Background(), id, ledger.Limits{}, "", est, time.Minute)
		return r
	}
	if admit(Estimate{InputPico: 2e12}) != nil || len(got) != 0 {
		t.Fatalf("a $2 input on a $1 budget: alerts %+v", got)
	}
	// A cent of input estimated (a quarter billed), and a cent a token.
	est := Estimate{InputPico: 1e10, TokenPico: 1e10, Tokens: 1000}
	for _, tokens := range []int64{50, 48} {
		r := admit(est)
		if r == nil {
			t.Fatal("refused with room left")
		}
		if bound, _ := r.OutputBound(); bound < tokens {
			t.Fatalf("bound %d, want at least %d", bound, tokens)
		}
		r.Settle(25e8 + tokens*est.TokenPico)
	}
	// 98.5 cents spent; 2 cents needed.
	for range 3 {
		if admit(est) != nil {
			t.Fatal("admitted past the limit")
		}
	}
	if len(got) != 2 || got[0].Kind != "80" || got[1].Kind != "100" {
		t.Fatalf("alerts %+v; want 80 %% and one 100 %%", got)
	}
	want := "🚫 Budget reached — api key one: $0.98 of $1.00 daily spent, less left than a request needs ($0.02 at least)"
	if text := AlertText(got[len(got)-1]); !strings.HasPrefix(text, want) || !strings.HasSuffix(text, "; requests needing more than is left are refused") {
		t.Errorf("alert %q, want it to start %q", text, want)
	}
}
