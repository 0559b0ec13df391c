package integration

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// dearModels prices the OpenAI fake so one request costs over a cent
// (8 uncached input tokens at $0.0005, 3 cached at no price, 7 output
// at $0.001: 1.1 cents). chatAs's body (59 bytes) is estimated at 2.95
// cents of input, so a budget admits it while 3.05 cents are left (its
// input and one output token), its output bound lowered to what is left.
func dearModels(u *upstreams) string {
	return strings.Replace(u.modelsYAML(), "      api_key: upstream-openai-secret\n", `      api_key: upstream-openai-secret
    model_info:
      input_cost_per_token: 0.0005
      output_cost_per_token: 0.001
`, 1)
}

func chatAs(t *testing.T, g *gateway, key, session string) (int, http.Header, []byte) {
	t.Helper()
	headers := []string{}
	if session != "" {
		headers = append(headers, "X-Claude-Code-Session-Id", session)
	}
	return g.do(t, "POST", "/v1/chat/completions", key, `{"model":"oa","messages":[{"role":"user","content":"hi"}]}`, headers...)
}

// untilRefused sends requests until the budget refuses one, for at most
// 3 seconds (the record's write plus a spend refresh).
func untilRefused(t *testing.T, g *gateway, key, session string) (http.Header, []byte) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		status, h, body := chatAs(t, g, key, session)
		if status == http.StatusTooManyRequests {
			return h, body
		}
		if status != 200 || time.Now().After(deadline) {
			t.Fatalf("want a budget refusal, got %d %s", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestBudgets: a key's budget admits requests while their estimates fit,
// then refuses with the 429 no client retries, in both error families; a
// reservation keeps concurrent requests from racing past it; a session
// budget stops one session and not the key's others.
func TestBudgets(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: dearModels(u)})

	k := createKey(t, g, `{"name":"capped","budget":{"amount":"5","period":"daily"}}`)
	if status, h, body := chatAs(t, g, k.Value, ""); status != 200 {
		t.Fatalf("first request under the budget: %d %s", status, body)
	} else if n, err := strconv.Atoi(h.Get("X-Modelgate-Max-Tokens-Lowered")); err != nil || n < 1 || n > 25 {
		t.Errorf("its 4096-token default lowered to the ~20 tokens 5 cents pay for: %q", h.Get("X-Modelgate-Max-Tokens-Lowered"))
	}
	h, body := untilRefused(t, g, k.Value, "")
	if h.Get("X-Should-Retry") != "false" {
		t.Errorf("x-should-retry %q", h.Get("X-Should-Retry"))
	}
	if ra, err := strconv.Atoi(h.Get("Retry-After")); err != nil || ra < 61 || ra > 86400 {
		t.Errorf("retry-after %q", h.Get("Retry-After"))
	}
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Type != "insufficient_quota" || e.Error.Code != "budget_exceeded" ||
		!strings.Contains(e.Error.Message, "api key "+k.ID) || !strings.Contains(e.Error.Message, "$0.05 daily") || !strings.Contains(e.Error.Message, "$0.02 spent") || !strings.Contains(e.Error.Message, "resets at") {
		t.Errorf("OpenAI-family refusal: %s", body)
	}
	// /v1/me shows the key its budget and what it spent.
	status, _, body := g.do(t, "GET", "/v1/me", k.Value, "")
	var me struct {
		ID      string   `json:"id"`
		Models  []string `json:"models"`
		Budgets []struct {
			Scope, Period, Amount, Spent string
			ResetsAt                     *string `json:"resets_at"`
		} `json:"budgets"`
	}
	if status != 200 || json.Unmarshal(body, &me) != nil || me.ID != k.ID || len(me.Budgets) != 1 || me.Budgets[0].Scope != "api_key" ||
		me.Budgets[0].Amount != "5" || me.Budgets[0].Spent != "2.2" || me.Budgets[0].ResetsAt == nil || len(me.Models) < 3 {
		t.Errorf("/v1/me: %d %s", status, body)
	}
	status, _, body = g.do(t, "POST", "/v1/messages", k.Value, `{"model":"oa","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`)
	if status != 429 || !strings.Contains(string(body), `"type":"rate_limit_error"`) || !strings.Contains(string(body), `"error_code":"budget_exceeded"`) {
		t.Errorf("Anthropic-family refusal: %d %s", status, body)
	}

	// Concurrent requests: the first reserves more than the budget holds,
	// so no other starts while it runs.
	k2 := createKey(t, g, `{"name":"racer","budget":{"amount":"5","period":"monthly"}}`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[int]int{}
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, _ := chatAs(t, g, k2.Value, "")
			mu.Lock()
			counts[status]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	if counts[200] < 1 || counts[200]+counts[429] != 8 || counts[200] > 2 {
		t.Errorf("8 concurrent requests on a 5-cent budget: %v", counts)
	}

	// A session budget refuses the session, not the key.
	k3 := createKey(t, g, `{"name":"agent","session_budget":"5"}`)
	if status, _, _ := chatAs(t, g, k3.Value, "session-one"); status != 200 {
		t.Fatalf("first request of a session: %d", status)
	}
	_, body = untilRefused(t, g, k3.Value, "session-one")
	if !strings.Contains(string(body), "session session-one") {
		t.Errorf("session refusal: %s", body)
	}
	if status, _, body := chatAs(t, g, k3.Value, "session-two"); status != 200 {
		t.Errorf("another session of the same key: %d %s", status, body)
	}

	// Refused requests are recorded as refused, at no cost.
	g.stop(t)
	refused := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Outcome == "refused" {
			refused++
			if rec.CostPicoUSD != 0 || rec.Status != 429 {
				t.Errorf("refused record %+v", rec)
			}
		}
	}
	if refused < 3 {
		t.Errorf("%d refused records", refused)
	}
}

// TestBudgetsAcrossInstances: on one PostgreSQL, what one instance spent
// counts on the other within 2 seconds.
func TestBudgetsAcrossInstances(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	u := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: dearModels(u), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	k := createKey(t, a, `{"name":"shared-budget","budget":{"amount":"4","period":"monthly"}}`)
	if status, _, body := chatAs(t, a, k.Value, ""); status != 200 {
		t.Fatalf("spend on a: %d %s", status, body)
	}
	// b may learn the key and a's spend in either order: a refusal is as
	// good as an answer here, an unknown key is not.
	start := time.Now()
	for {
		status, _, body := chatAs(t, b, k.Value, "")
		if status == http.StatusTooManyRequests {
			break
		}
		if (status != 401 && status != 200) || time.Since(start) > 3*time.Second {
			t.Fatalf("want b to refuse the spent budget, got %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("b refused a's spent budget after %v", time.Since(start))
}

// outputPricedModels prices only the OpenAI fake's output ($0.001 a token,
// 7 tokens: 0.7 cents a request), so a request fits while a tenth of a
// cent is left, and the fake, which bills 7 tokens whatever bound it is
// sent, can carry spend past a budget for its alerts.
func outputPricedModels(u *upstreams) string {
	return strings.Replace(u.modelsYAML(), "      api_key: upstream-openai-secret\n", `      api_key: upstream-openai-secret
    model_info:
      input_cost_per_token: 0
      output_cost_per_token: 0.001
`, 1)
}

// TestBudgetAlerts: soft, 80 % and 100 % alerts and a session cap reach
// the team chat webhook once each, though two instances on one database
// saw the crossings and a refusal saw the budget again.
func TestBudgetAlerts(t *testing.T) {
	hook, a, b := alertingGateways(t, outputPricedModels)
	k := createKey(t, a, `{"name":"alerted","budget":{"amount":"2","period":"daily"},"soft_budget":"1"}`)
	if status, _, body := chatAs(t, a, k.Value, ""); status != 200 {
		t.Fatalf("first: %d %s", status, body)
	}
	// b spends the rest once it has seen a's spend.
	waitStatus(t, b, k.Value, "echo", 200)
	deadline := time.Now().Add(3 * time.Second)
	for {
		_, _, me := b.do(t, "GET", "/v1/me", k.Value, "")
		if strings.Contains(string(me), `"spent":"0.7"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if status, _, body := chatAs(t, b, k.Value, ""); status != 200 {
		t.Fatalf("second: %d %s", status, body)
	}
	// a spends past the limit once it has seen b's spend: its third
	// request is admitted on the 0.6 cents left, and the fake bills 0.7.
	deadline = time.Now().Add(3 * time.Second)
	for {
		_, _, me := a.do(t, "GET", "/v1/me", k.Value, "")
		if strings.Contains(string(me), `"spent":"1.4"`) || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, refusal := untilRefused(t, a, k.Value, "")
	t.Logf("refused: %s", refusal)
	s := createKey(t, a, `{"name":"agent","session_budget":"1"}`)
	chatAs(t, a, s.Value, "sess-42")
	chatAs(t, a, s.Value, "sess-42") // 1.4 cents: past its cent

	var got []string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
		got = hook.Posts()
		if len(got) >= 4 {
			break
		}
	}
	time.Sleep(500 * time.Millisecond) // a duplicate would arrive now
	got = hook.Posts()
	// Alerts name a runtime key by its name, its id beside it.
	named, agent := "alerted ("+k.ID+")", "agent ("+s.ID+")"
	want := []string{"Soft budget reached — api key " + named, "80% of budget — api key " + named, "Budget reached — api key " + named, "Session cap reached — session sess-42 of key " + agent}
	if len(got) != len(want) {
		t.Fatalf("posts %q, want one each of %q", got, want)
	}
	for _, w := range want {
		n := 0
		for _, p := range got {
			if strings.Contains(p, w) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d posts contain %q: %q", n, w, got)
		}
	}
	if strings.Contains(a.stderr.String()+b.stderr.String(), "secret") {
		t.Error("the webhook URL reached a log")
	}
}

// TestWorkspaceBudget: a workspace's budget is shared by its keys: what
// one spent stops the other.
func TestWorkspaceBudget(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: dearModels(u)})
	status, _, body := g.do(t, "POST", "/v1/organizations/workspaces", adminKey, `{"name":"interns","budget":{"amount":"5","period":"weekly"}}`)
	var ws struct {
		ID string `json:"id"`
	}
	if status != 200 || json.Unmarshal(body, &ws) != nil {
		t.Fatalf("workspace: %d %s", status, body)
	}
	one := createKey(t, g, `{"name":"intern-1","workspace_id":"`+ws.ID+`"}`)
	two := createKey(t, g, `{"name":"intern-2","workspace_id":"`+ws.ID+`"}`)
	if status, _, body := chatAs(t, g, one.Value, ""); status != 200 {
		t.Fatalf("first intern: %d %s", status, body)
	}
	_, body = untilRefused(t, g, two.Value, "")
	if !strings.Contains(string(body), "workspace "+ws.ID) || !strings.Contains(string(body), "weekly") {
		t.Errorf("refusal names the workspace budget: %s", body)
	}
}

// TestBudgetReservationsAcrossInstances (hostile review §4): on one
// PostgreSQL, two instances admit together what one would. Each request
// reserves about $1.05 (1,000 output tokens at $0.001, its body at
// $0.0005 a byte) and streams for over a second; a $5 budget admits five
// of twenty sent at once, half to each instance (ten before reservations
// were shared).
func TestBudgetReservationsAcrossInstances(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	u := startUpstreams(t, fakes.Options{Chunks: 12, Gap: 120 * time.Millisecond})
	cfg := gatewayConfig{models: dearModels(u), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	k := createKey(t, a, `{"name":"five-dollars","budget":{"amount":"500","period":"monthly"}}`)
	waitForKey(t, b, k.Value)
	body := `{"model":"oa","stream":true,"max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`
	statuses := concurrently(20, func(i int) int {
		g := a
		if i%2 == 1 {
			g = b
		}
		status, _, _ := g.do(t, "POST", "/v1/chat/completions", k.Value, body)
		return status
	})
	if statuses[200] != 5 || statuses[429] != 15 {
		t.Fatalf("20 concurrent $1.05 requests on a $5 budget over two instances: %v; want 5 admitted, 15 refused", statuses)
	}
}

// TestBudgetReservationCoversChoices (hostile review §2): n multiplies the
// output bound, so n=8 at max_tokens 1000 reserves $8 and a $5 budget
// refuses it before it reaches the upstream.
func TestBudgetReservationCoversChoices(t *testing.T) {
	// Streams that take over a second, so the ten overlap.
	u := startUpstreams(t, fakes.Options{Chunks: 12, Gap: 100 * time.Millisecond})
	g := startGateway(t, gatewayConfig{models: dearModels(u)})
	k := createKey(t, g, `{"name":"choices","budget":{"amount":"500","period":"monthly"}}`)
	before := u.openaiRec.Count()
	// The first request is admitted whatever it asks: the budget has room.
	// What must not happen is a second one while the first's $8 is held.
	body := `{"model":"oa","stream":true,"max_tokens":1000,"n":8,"messages":[{"role":"user","content":"hi"}]}`
	statuses := concurrently(10, func(int) int {
		status, _, _ := g.do(t, "POST", "/v1/chat/completions", k.Value, body)
		return status
	})
	if statuses[200] > 1 || u.openaiRec.Count()-before > 1 {
		t.Fatalf("10 concurrent n=8 requests reserving $8 each on a $5 budget: %v, %d reached the upstream; want at most 1",
			statuses, u.openaiRec.Count()-before)
	}
}

// waitForKey waits until g knows a key created on another instance.
func waitForKey(t *testing.T, g *gateway, key string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		status, _, body := g.do(t, "GET", "/v1/me", key, "")
		if status == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the other instance never learned the key: %d %s", status, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// concurrently runs f n times at once and counts the statuses it returns.
func concurrently(n int, f func(i int) int) map[int]int {
	var mu sync.Mutex
	out := map[int]int{}
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := f(i)
			mu.Lock()
			out[s]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// TestBudgetReservationCoversStoredHistory (hostile review §3): the stored
// conversation a Responses turn names by previous_response_id is input
// the upstream bills, so its reservation counts it. A 4,000-byte stored
// input reserves $2 at $0.0005 a byte: a $5 budget admits three turns on
// it at once (before: every one, on the turn's own few bytes).
func TestBudgetReservationCoversStoredHistory(t *testing.T) {
	u := startUpstreams(t, fakes.Options{Chunks: 12, Gap: 100 * time.Millisecond})
	g := startGateway(t, gatewayConfig{models: dearModels(u)})
	k := createKey(t, g, `{"name":"history","budget":{"amount":"500","period":"monthly"}}`)
	status, _, out := g.do(t, "POST", "/v1/responses", k.Value,
		`{"model":"oa","max_output_tokens":16,"store":true,"input":"`+strings.Repeat("x", 4000)+`"}`)
	var seed struct{ ID string }
	if status != 200 || json.Unmarshal(out, &seed) != nil || seed.ID == "" {
		t.Fatalf("seeding the conversation: %d %s", status, out)
	}
	turn := `{"model":"oa","stream":true,"max_output_tokens":16,"store":false,"previous_response_id":"` + seed.ID + `","input":"go on"}`
	statuses := concurrently(10, func(int) int {
		status, _, _ := g.do(t, "POST", "/v1/responses", k.Value, turn)
		return status
	})
	if statuses[200] > 3 || statuses[429] < 7 {
		t.Fatalf("10 concurrent turns on a 4,000-byte stored history, $5 budget: %v; want at most 3 admitted", statuses)
	}
}

// TestBudgetBackToBackNearTheLimit (newcomer B1): on PostgreSQL, requests
// sent one after another, each as soon as the one before returned,
// alternating between two instances, are all admitted until real spend
// reaches the budget: a finished request holds only its cost, at once,
// not its estimate until the ledger writer's batch lands. No "budget
// reached" alert comes before spend reaches the budget. Each request is
// estimated at 2 cents (20 output tokens at $0.001) and billed 0.7.
func TestBudgetBackToBackNearTheLimit(t *testing.T) {
	hook, a, b := alertingGateways(t, outputPricedModels)
	k := createKey(t, a, `{"name":"newcomer","budget":{"amount":"5","period":"monthly"}}`)
	waitForKey(t, b, k.Value)
	body := `{"model":"oa","max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`
	admitted := 0
	for i := range 12 {
		g := []*gateway{a, b}[i%2]
		status, _, out := g.do(t, "POST", "/v1/chat/completions", k.Value, body)
		if status == http.StatusTooManyRequests {
			if admitted < 8 {
				t.Fatalf("request %d refused at %.1f cents spent of 5: %s", i+1, 0.7*float64(admitted), out)
			}
			break
		}
		if status != 200 {
			t.Fatalf("request %d: %d %s", i+1, status, out)
		}
		admitted++
		if admitted < 8 {
			for _, p := range hook.Posts() {
				if strings.Contains(p, "Budget reached") {
					t.Errorf("after %d requests (%.1f cents of 5): %s", admitted, 0.7*float64(admitted), p)
				}
			}
		}
	}
	// Seven requests leave 0.1 cents, the eighth's input and one token:
	// it is admitted with its bound lowered, and the fake bills it 0.7.
	if admitted != 8 {
		t.Errorf("%d requests admitted, want 8", admitted)
	}
	// Hostile D5 (b): 80 % was passed by whichever instance had not read
	// the other's last costs; the refresh that reads them alerts, once
	// across both, as does 100 %, passed by the eighth request's bill.
	wantOnce(t, hook, "80% of budget — api key newcomer", "Budget reached — api key newcomer")
}

// wantOnce waits up to 5 seconds (a record's write plus two spend
// refreshes) for one post containing each of parts, then checks that no
// second came while the other instance refreshed.
func wantOnce(t *testing.T, hook *chatSink, parts ...string) {
	t.Helper()
	count := func(part string) int {
		n := 0
		for _, p := range hook.Posts() {
			if strings.Contains(p, part) {
				n++
			}
		}
		return n
	}
	start := time.Now()
	for _, part := range parts {
		for end := start.Add(5 * time.Second); count(part) == 0 && time.Now().Before(end); {
			time.Sleep(50 * time.Millisecond)
		}
		t.Logf("%q posted %v after the last request", part, time.Since(start))
	}
	time.Sleep(1500 * time.Millisecond) // both instances refreshed past it: a duplicate would be here
	for _, part := range parts {
		if n := count(part); n != 1 {
			t.Errorf("%d posts contain %q; want 1: %q", n, part, hook.Posts())
		}
	}
}
