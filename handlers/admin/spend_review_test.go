package admin

import (
	"encoding/json"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// Regression tests for hostile review 4's spend-limit findings.

// A group's lead who is also a member asks for more: neither they nor an
// admin signed in as themselves approves their own request; another lead
// or the gateway's admin key does (hostile review 4, finding 1).
func TestNoOneApprovesTheirOwnIncreaseRequest(t *testing.T) {
	sa := newSpendAdmin(t)
	lead := sa.signedIn(t, "lead@example.com")
	rec := sa.call(t, lead, "POST", adminapi.IncreaseRequestsPath, `{"amount":"100"}`)
	if rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	created := decode[adminapi.IncreaseRequest](t, rec)
	for _, action := range []string{"approve", "deny"} {
		rec = sa.call(t, lead, "POST", adminapi.IncreaseRequestsPath+"/"+created.ID+"/"+action, `{"amount":"10000000"}`)
		if rec.Code != 403 {
			t.Errorf("the lead %ss their own request: %d %s", action, rec.Code, rec.Body)
		}
	}
	// An admin signed in as the same person is refused too.
	adminLead := &policy.Identity{KeyID: "lead@example.com", Person: "lead@example.com", Role: policy.RoleAdmin, Groups: "eng"}
	if rec = sa.call(t, adminLead, "POST", adminapi.IncreaseRequestsPath+"/"+created.ID+"/approve", `{"amount":"100"}`); rec.Code != 403 {
		t.Errorf("an admin approves their own request: %d %s", rec.Code, rec.Body)
	}
	// The gateway's admin key, which is no person, may.
	if rec = sa.call(t, adminID, "POST", adminapi.IncreaseRequestsPath+"/"+created.ID+"/approve", `{"amount":"100"}`); rec.Code != 200 {
		t.Errorf("the admin key approving: %d %s", rec.Code, rec.Body)
	}
}

// The Spend Limits API refuses an at_cap downgrade to an alias that is not
// free, naming it and why (hostile review 4, finding 6).
func TestSpendLimitRefusesADowngradeThatIsNotFree(t *testing.T) {
	sa := newSpendAdmin(t)
	sa.a.Spend.DowngradeTarget = func(alias string, _ ledger.DowngradeBound) string {
		if alias == "local" {
			return ""
		}
		return `"` + alias + `" is not free: openai/gpt-x is a cloud model`
	}
	rec := sa.call(t, adminID, "POST", adminapi.SpendLimitsPath,
		`{"amount":"1","scope":{"type":"api_key","api_key_id":"alice"},"at_cap":{"action":"downgrade","alias":"unpriced"}}`)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), `at_cap.alias: \"unpriced\" is not free`) {
		t.Errorf("a downgrade to an unpriced alias: %d %s", rec.Code, rec.Body)
	}
	rec = sa.call(t, adminID, "POST", adminapi.SpendLimitsPath,
		`{"amount":"1","scope":{"type":"api_key","api_key_id":"alice"},"at_cap":{"action":"downgrade","alias":"local"}}`)
	if rec.Code != 200 {
		t.Errorf("a downgrade to a free alias: %d %s", rec.Code, rec.Body)
	}
}

// The approvers' link is built on the configured public URL, never the
// Host the person asking sent; without one the line has no link and says
// where to decide (hostile review 4, finding 2).
func TestApproversLinkIgnoresTheRequestHost(t *testing.T) {
	sa := newSpendAdmin(t)
	bob := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Groups: "eng", Runtime: true}
	if rec := sa.call(t, bob, "POST", "http://evil.example:8443"+adminapi.IncreaseRequestsPath, `{"amount":"5000"}`); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if line := sa.chat[0]; strings.Contains(line, "evil.example") || !strings.Contains(line, "https://gw.example"+SpendLinkPath) {
		t.Errorf("approvers' line: %s", line)
	}
	sa.a.Spend.PublicURL = ""
	carol := &policy.Identity{KeyID: "apikey_carol", Owner: "carol@example.com", Groups: "eng", Runtime: true}
	if rec := sa.call(t, carol, "POST", "http://evil.example:8443"+adminapi.IncreaseRequestsPath, `{"amount":"6000"}`); rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if line := sa.chat[1]; strings.Contains(line, "://") || !strings.Contains(line, "set public_url") || !strings.Contains(line, "caddy modelgate requests approve splir_") {
		t.Errorf("approvers' line without a public URL: %s", line)
	}
}

// The spend limit routes answer methods and paths they do not take in the
// API's family and status (hostile review 4, finding 11).
func TestSpendLimitRoutesMethodsAndPaths(t *testing.T) {
	sa := newSpendAdmin(t)
	member := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Runtime: true}
	for _, tc := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{"OPTIONS", adminapi.SpendLimitsPath + "/spl_x", 405, "GET, HEAD, DELETE"},
		{"OPTIONS", adminapi.EffectiveLimitsPath, 405, "GET, HEAD"},
		{"DELETE", adminapi.EffectiveLimitsPath, 405, "GET, HEAD"},
		{"GET", "/" + adminapi.SpendLimitsPath, 404, ""},
	} {
		rec := sa.call(t, member, tc.method, tc.path, "")
		if rec.Code != tc.status || rec.Header().Get("Allow") != tc.allow || !strings.Contains(rec.Body.String(), `"type":"error"`) {
			t.Errorf("%s %s: %d Allow %q %s; want %d Allow %q in Anthropic's family", tc.method, tc.path, rec.Code, rec.Header().Get("Allow"), rec.Body, tc.status, tc.allow)
		}
	}
	req := httptest.NewRequest("GET", "//v1/organizations/spend_limits", nil)
	if !sa.a.Match(req) {
		t.Error("llm_admin does not take //v1/organizations/spend_limits, which the gateway would answer in OpenAI's family")
	}
	bob := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Groups: "eng", Runtime: true}
	created := decode[adminapi.IncreaseRequest](t, sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"5000"}`))
	for body, want := range map[string]string{`{}`: "amount: required", `{"amount":"100000001"}`: "amount: ", `{"amount":"1.5"}`: "amount: "} {
		rec := sa.call(t, adminID, "POST", adminapi.IncreaseRequestsPath+"/"+created.ID+"/approve", body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), want) || (body != `{}` && strings.Contains(rec.Body.String(), "required")) {
			t.Errorf("approve %s: %d %s; want 400 %q", body, rec.Code, rec.Body, want)
		}
	}
}

// A priced downgrade is set with its bound, checked against the
// gateway's chain (a pricier fallback refused, naming it), and shown back
// as it was set.
func TestSpendLimitPricedDowngrade(t *testing.T) {
	sa := newSpendAdmin(t)
	var asked ledger.DowngradeBound
	sa.a.Spend.DowngradeTarget = func(alias string, b ledger.DowngradeBound) string {
		asked = b
		if alias == "leaky" {
			return `"leaky" is dearer than the bound ($0.15 input, $0.6 output per million tokens): alias "paid": openai/gpt-x costs $3 input, $15 output`
		}
		return ""
	}
	rec := sa.call(t, adminID, "POST", adminapi.SpendLimitsPath,
		`{"amount":"100","scope":{"type":"user","user_id":"bob@example.com"},"at_cap":{"action":"downgrade","alias":"leaky","max_price":{"input":"15","output":"60"},"allowance":"500"}}`)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), `at_cap.alias: \"leaky\" is dearer than the bound`) {
		t.Errorf("a chain with a pricier fallback: %d %s", rec.Code, rec.Body)
	}
	if want := (ledger.DowngradeBound{MaxInputPico: 150_000, MaxOutputPico: 600_000, AllowanceCents: 500}); asked != want {
		t.Errorf("the check was given %+v, want %+v", asked, want)
	}
	rec = sa.call(t, adminID, "POST", adminapi.SpendLimitsPath,
		`{"amount":"100","scope":{"type":"user","user_id":"bob@example.com"},"at_cap":{"action":"downgrade","alias":"cheap","max_price":{"input":"15","output":"60"},"allowance":"500"}}`)
	var got adminapi.SpendLimit
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &got) != nil || got.AtCap == nil || got.AtCap.Allowance != "500" ||
		got.AtCap.MaxPrice == nil || *got.AtCap.MaxPrice != (adminapi.PricePerMillion{Input: "15", Output: "60"}) {
		t.Fatalf("set a priced downgrade: %d %s", rec.Code, rec.Body)
	}
	rec = sa.call(t, adminID, "GET", adminapi.SpendLimitsPath+"/"+got.ID, "")
	if !strings.Contains(rec.Body.String(), `"at_cap":{"action":"downgrade","alias":"cheap","max_price":{"input":"15","output":"60"},"allowance":"500"}`) {
		t.Errorf("get: %d %s", rec.Code, rec.Body)
	}
}

// Approving a person's increase request raises their limit and keeps what
// happens at its cap: here their group's per-member default's priced
// downgrade, which the user limit the approval writes carries on.
func TestIncreaseApprovalKeepsTheDowngrade(t *testing.T) {
	sa := newSpendAdmin(t)
	if rec := sa.call(t, adminID, "POST", adminapi.SpendLimitsPath,
		`{"amount":"100","scope":{"type":"rbac_group","rbac_group_id":"eng"},"at_cap":{"action":"downgrade","alias":"cheap","max_price":{"input":"15","output":"60"},"allowance":"500"}}`); rec.Code != 200 {
		t.Fatalf("eng's default: %d %s", rec.Code, rec.Body)
	}
	bob := sa.signedIn(t, "bob@example.com")
	rec := sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"300"}`)
	created := decode[adminapi.IncreaseRequest](t, rec)
	if rec = sa.call(t, adminID, "POST", adminapi.IncreaseRequestsPath+"/"+created.ID+"/approve", `{"amount":"300"}`); rec.Code != 200 {
		t.Fatalf("approve: %d %s", rec.Code, rec.Body)
	}
	list := sa.call(t, adminID, "GET", adminapi.SpendLimitsPath+"?scope_type[]=user", "", "anthropic-beta", adminapi.SpendLimitReadsBeta)
	if !strings.Contains(list.Body.String(), `"amount":"300"`) ||
		!strings.Contains(list.Body.String(), `"at_cap":{"action":"downgrade","alias":"cheap","max_price":{"input":"15","output":"60"},"allowance":"500"}`) {
		t.Errorf("bob's limit after the approval: %s", list.Body)
	}
}

// A reason is the asker's text: in the approvers' chat line it can
// neither ping the channel nor pose as the approve link (hostile pass 10,
// H10-4); the request keeps it as written.
func TestIncreaseReasonCannotPingOrLink(t *testing.T) {
	sa := newSpendAdmin(t)
	bob := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Groups: "eng", Runtime: true}
	reason := "release week <!here> <http://evil.example/x|Approve> [Approve](http://evil.example/y)"
	rec := sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"5000","reason":`+strconvQuote(reason)+`}`)
	if rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	if got := decode[adminapi.IncreaseRequest](t, rec); got.Reason != reason {
		t.Errorf("stored reason %q", got.Reason)
	}
	line := sa.chat[0]
	if strings.ContainsAny(line, "<>") || strings.Contains(line, "](") || !strings.Contains(line, "&lt;!here&gt;") {
		t.Errorf("approvers' line: %s", line)
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

// A person has one pending request per period: asking again is 409
// naming the pending one, and posts nothing; another period, or asking
// after the request was decided, is a new request (hostile pass 10,
// H10-10).
func TestOnePendingIncreaseRequestPerPersonAndPeriod(t *testing.T) {
	sa := newSpendAdmin(t)
	bob := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Groups: "eng", Runtime: true}
	rec := sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"5000","period":"monthly","reason":"spam 0"}`)
	if rec.Code != 200 {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	first := decode[adminapi.IncreaseRequest](t, rec)
	for i := 1; i <= 5; i++ {
		rec = sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"50`+strconv.Itoa(i)+`0","period":"monthly","reason":"spam"}`)
		if rec.Code != 409 || !strings.Contains(rec.Body.String(), first.ID) {
			t.Fatalf("ask again %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if len(sa.chat) != 1 {
		t.Fatalf("chat posts: %d, want 1", len(sa.chat))
	}
	if rec = sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"100","period":"daily"}`); rec.Code != 200 {
		t.Fatalf("another period: %d %s", rec.Code, rec.Body)
	}
	if rec = sa.call(t, adminID, "POST", adminapi.IncreaseRequestsPath+"/"+first.ID+"/deny", `{}`); rec.Code != 200 {
		t.Fatalf("deny: %d %s", rec.Code, rec.Body)
	}
	if rec = sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"6000","period":"monthly"}`); rec.Code != 200 {
		t.Fatalf("asking after the denial: %d %s", rec.Code, rec.Body)
	}
}

// Asked at once (two instances, or a client that does not wait), one
// request is stored and the approvers told once; the others are 409
// naming it (hostile pass 10: the database enforces one pending request).
func TestConcurrentIncreaseRequestsOneStored(t *testing.T) {
	sa := newSpendAdmin(t)
	bob := &policy.Identity{KeyID: "apikey_bob", Owner: "bob@example.com", Groups: "eng", Runtime: true}
	const n = 8
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = sa.call(t, bob, "POST", adminapi.IncreaseRequestsPath, `{"amount":"50`+strconv.Itoa(i)+`0","period":"monthly","reason":"at once"}`).Code
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case 200:
			ok++
		case 409:
		default:
			t.Fatalf("codes %v", codes)
		}
	}
	sa.mu.Lock()
	posts := len(sa.chat)
	sa.mu.Unlock()
	if ok != 1 || posts != 1 {
		t.Fatalf("%d stored, %d chat posts (codes %v), want 1 and 1", ok, posts, codes)
	}
}
