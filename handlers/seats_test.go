package handlers

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

const (
	seatToken  = "sk-ant-oat01-seat-token-of-alice"
	seatBeta   = "oauth-2025-04-20"
	gatewayKey = "mg-alice-gateway-key"
)

// seatUpstream is a fake Anthropic that answers only a request carrying
// exactly the seat's credential, and keeps the headers it saw.
type seatUpstream struct {
	mu   sync.Mutex
	seen []http.Header
}

func (s *seatUpstream) handler() http.Handler {
	inner := fakes.Anthropic(fakes.Options{}, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Clone())
		s.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+seatToken || r.Header.Get("X-Api-Key") != "" ||
			!strings.Contains(r.Header.Get("Anthropic-Beta"), seatBeta) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"not the seat's credential"}}`))
			return
		}
		// The fake insists on a key of its own; the seat's token stood in.
		r.Header.Set("X-Api-Key", "checked")
		inner.ServeHTTP(w, r)
	})
}

func seatGateway(t *testing.T, up string, extra ...string) (*Gateway, *recorder) {
	t.Helper()
	params := "      passthrough_auth: true\n"
	for _, e := range extra {
		params += "      " + e + "\n"
	}
	yaml := "model_list:\n  - model_name: seat\n    proxy_params:\n      model: anthropic/claude-sonnet-4-5\n      api_base: " + up + "\n" + params
	return testGateway(t, yaml, nil)
}

func seatPost(g *Gateway, seat bool, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/v1/messages", strings.NewReader(`{"model":"seat","max_tokens":20,"stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Anthropic-Version", "2023-06-01")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	req = req.WithContext(policy.WithIdentity(req.Context(), alice))
	if seat {
		req, _ = SeatRequest(req, knownKeys{gatewayKey})
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec
}

type knownKeys []string

func (k knownKeys) Knows(s string) bool {
	for _, x := range k {
		if x == s {
			return true
		}
	}
	return false
}

// A seat's request reaches the provider with the caller's own token and
// beta, none of the gateway's; its record is notional and, without
// passthrough_budget, counts against no budget.
func TestSeatCredentialGoesUpstreamUnchanged(t *testing.T) {
	s := &seatUpstream{}
	up := httptest.NewServer(s.handler())
	t.Cleanup(up.Close)
	g, obs := seatGateway(t, up.URL)
	w := seatPost(g, true, "Authorization", "Bearer "+seatToken, "Anthropic-Beta", seatBeta, "X-Modelgate-Key", gatewayKey)
	if w.Code != 200 || !strings.Contains(w.Body.String(), "message_stop") {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if len(s.seen) != 1 {
		t.Fatalf("upstream saw %d requests", len(s.seen))
	}
	for k, v := range s.seen[0] {
		for _, x := range v {
			if strings.Contains(x, gatewayKey) {
				t.Errorf("the gateway key reached the provider in %s", k)
			}
		}
	}
	recs := obs.Records()
	if len(recs) != 1 || recs[0].KeyID != "alice" || !recs[0].Notional || !recs[0].ReportOnly || recs[0].CostPicoUSD <= 0 {
		t.Fatalf("records %+v", recs)
	}
}

// passthrough_budget makes a seat's notional cost count.
func TestSeatBudgetCounts(t *testing.T) {
	s := &seatUpstream{}
	up := httptest.NewServer(s.handler())
	t.Cleanup(up.Close)
	g, obs := seatGateway(t, up.URL, "passthrough_budget: true")
	if w := seatPost(g, true, "Authorization", "Bearer "+seatToken, "Anthropic-Beta", seatBeta); w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if recs := obs.Records(); len(recs) != 1 || !recs[0].Notional || recs[0].ReportOnly {
		t.Fatalf("records %+v", recs)
	}
	if g.budgetsFor("seat") != g.opts.Budgets {
		t.Errorf("a counted seat must be admitted against budgets")
	}
}

// A request that did not present its gateway key as a seat never has its
// Authorization sent on (it is the gateway key), and one that puts a
// gateway key where the provider's credential goes is refused.
func TestSeatNeedsSeparateKey(t *testing.T) {
	s := &seatUpstream{}
	up := httptest.NewServer(s.handler())
	t.Cleanup(up.Close)
	g, obs := seatGateway(t, up.URL)
	w := seatPost(g, false, "Authorization", "Bearer "+gatewayKey)
	if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "X-Modelgate-Key") {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	if len(s.seen) != 0 {
		t.Fatalf("the provider was called without a seat credential")
	}
	if recs := obs.Records(); len(recs) != 1 || recs[0].Status != http.StatusUnauthorized {
		t.Fatalf("records %+v", recs)
	}
	for _, h := range [][2]string{{"Authorization", "Bearer " + gatewayKey}, {"X-Api-Key", gatewayKey}} {
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
		req.Header.Set(h[0], h[1])
		req.Header.Set("X-Modelgate-Key", "mg-other")
		if _, apiErr := SeatRequest(req, knownKeys{gatewayKey}); apiErr == nil || apiErr.Status != http.StatusBadRequest || strings.Contains(apiErr.Message, gatewayKey) {
			t.Errorf("%s holding a gateway key: %+v", h[0], apiErr)
		}
	}
	// Every value of the provider headers goes upstream: a second value,
	// or a gateway key after another scheme word or none, is refused too
	// (a hostile review got a second Authorization and a schemeless key
	// through).
	for _, hs := range [][][2]string{
		{{"Authorization", "Bearer sk-ant-oat01-seat"}, {"Authorization", "Bearer " + gatewayKey}},
		{{"X-Api-Key", "sk-ant-seat"}, {"X-Api-Key", gatewayKey}},
		{{"Authorization", gatewayKey}},
		{{"Authorization", "Basic " + gatewayKey}},
	} {
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
		for _, h := range hs {
			req.Header.Add(h[0], h[1])
		}
		req.Header.Set("X-Modelgate-Key", "mg-other")
		if _, apiErr := SeatRequest(req, knownKeys{gatewayKey}); apiErr == nil || apiErr.Status != http.StatusBadRequest || strings.Contains(apiErr.Message, gatewayKey) {
			t.Errorf("%v: %+v", hs, apiErr)
		}
	}
}

// Every entry of an alias must agree on passthrough_auth and
// passthrough_budget (a request is admitted for its alias, before the
// balancer picks the entry: a budget read from one entry and a record
// counted by another would spend without a reservation), and only
// Anthropic and OpenAI-compatible entries take it; the errors name the
// entry and the field.
func TestSeatConfigErrors(t *testing.T) {
	for _, tc := range []struct{ yaml, want string }{
		{"model_list:\n  - model_name: s\n    proxy_params: {model: anthropic/claude-sonnet-4-5, passthrough_auth: true}\n  - model_name: s\n    proxy_params: {model: anthropic/claude-sonnet-4-5, api_key: k}\n",
			`model_list[1] (model_name "s"): proxy_params.passthrough_auth: is false but model_list[0]`},
		{"model_list:\n  - model_name: s\n    proxy_params: {model: anthropic/claude-sonnet-4-5, passthrough_auth: true}\n  - model_name: s\n    proxy_params: {model: anthropic/claude-sonnet-4-5, passthrough_auth: true, passthrough_budget: true}\n",
			`model_list[1] (model_name "s"): proxy_params.passthrough_budget: is true but model_list[0]`},
		{"model_list:\n  - model_name: s\n    proxy_params: {model: echo/x, passthrough_auth: true}\n", `proxy_params.passthrough_auth: echo/`},
		{"model_list:\n  - model_name: s\n    proxy_params: {model: anthropic/claude-sonnet-4-5, passthrough_auth: true, api_key: k}\n", `proxy_params.api_key: a passthrough_auth entry`},
		{"model_list:\n  - model_name: s\n    proxy_params: {model: anthropic/claude-sonnet-4-5, api_key: k, passthrough_budget: true}\n", `proxy_params.passthrough_budget: applies only with passthrough_auth`},
		{"model_list:\n  - model_name: s\n    proxy_params: {model: anthropic/claude-sonnet-4-5, passthrough_auth: maybe}\n", `proxy_params.passthrough_auth: "maybe" is not a choice`},
	} {
		_, _, err := modellist.Parse([]byte(tc.yaml), "models.yaml", func(string) (string, bool) { return "", false })
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}

// A seat whose provider refuses its token gets that answer; the shared
// deployment is not cooled down for it.
func TestSeatRefusalIsTheCallers(t *testing.T) {
	s := &seatUpstream{}
	up := httptest.NewServer(s.handler())
	t.Cleanup(up.Close)
	g, obs := seatGateway(t, up.URL)
	for range 5 {
		w := seatPost(g, true, "Authorization", "Bearer sk-ant-oat01-expired", "Anthropic-Beta", seatBeta)
		if w.Code != http.StatusUnauthorized || !strings.Contains(w.Body.String(), "not the seat's credential") {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
	if w := seatPost(g, true, "Authorization", "Bearer "+seatToken, "Anthropic-Beta", seatBeta); w.Code != 200 {
		t.Fatalf("a good seat after others' refusals: status %d: %s", w.Code, w.Body)
	}
	for _, a := range obs.Attempts() {
		if a.Retrying {
			t.Errorf("a seat's refusal was retried: %+v", a)
		}
	}
}

// A paid alias falling back to a seat alias passes the seat over for a
// request without a seat credential: the client gets the paid alias's
// own failure, not the seat's refusal.
func TestSeatFallbackPassedOverWithoutSeat(t *testing.T) {
	s := &seatUpstream{}
	seat := httptest.NewServer(s.handler())
	t.Cleanup(seat.Close)
	down := newFakeUpstream(t, "down", statusAnswer(http.StatusServiceUnavailable, ""))
	yaml := "model_list:\n" + entry("paid", down.srv.URL) +
		"  - model_name: seat\n    proxy_params:\n      model: anthropic/claude-sonnet-4-5\n      api_base: " + seat.URL + "\n      passthrough_auth: true\n" +
		"router_settings:\n  fallbacks:\n    - paid: [seat]\n"
	g, _ := testGateway(t, yaml, nil)
	w := post(g, alice, "/v1/chat/completions", chatBody("paid", false))
	if w.Code != http.StatusServiceUnavailable || strings.Contains(w.Body.String(), "passthrough_auth") || len(s.seen) != 0 {
		t.Fatalf("status %d: %s (the seat saw %d)", w.Code, w.Body, len(s.seen))
	}
}
