package integration

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
)

// TestSpendLimitsNodeSDK drives the Spend Limits API with the official
// Anthropic Node SDK, unmodified, and the gateway's admin key
// (testdata/spend_limits.mjs): every spend limits method the SDK has, its
// paging and beta header, and its error classes on the gateway's refusals.
// Two increase requests are put in the ledger as a person's would be.
func TestSpendLimitsNodeSDK(t *testing.T) {
	dir, node := testbin.NodeSDKs(t)
	run := installScript(t, dir, "spend_limits.mjs")
	gdir := t.TempDir()
	path := filepath.Join(gdir, "ledger.db")
	g := startGateway(t, gatewayConfig{dir: gdir, ledgerPath: path, models: "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\n"})
	s, err := ledger.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var ids []string
	for _, who := range []string{"dan@example.com", "erin@example.com"} {
		r, err := s.(ledger.IncreaseRequestStore).CreateIncreaseRequest(context.Background(), ledger.IncreaseRequest{Person: who, Email: who,
			Groups: []string{"eng"}, Period: "weekly", AmountCents: 9000, Reason: "release"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, r.ID)
	}
	outb := runNode(t, dir, node, run, "MODELGATE_BASE="+g.base, "MODELGATE_API_KEY="+adminKey, "MODELGATE_REQUESTS="+strings.Join(ids, ","))
	var out struct {
		UpsertKeptID bool    `json:"upsertKeptID"`
		NullAmount   *string `json:"nullAmount"`
		Retrieved    string
		Listed       []string
		Users        []string
		Effective    []struct{ User, Amount, Source, Spend string }
		Pending      []string
		Approved     struct {
			Status, Amount, Summary string
			Scope                   struct {
				Type   string
				UserID string `json:"user_id"`
			}
		}
		Denied, RetrievedRequest, DenyApproved, Missing, BadAmount, Deleted string
	}
	if err := json.Unmarshal(outb, &out); err != nil {
		t.Fatalf("script output: %v: %s", err, outb)
	}
	t.Logf("%s", outb)
	if !out.UpsertKeptID || out.NullAmount != nil || out.Retrieved != "organization" {
		t.Errorf("set and retrieve: %s", outb)
	}
	if !slices.Equal(out.Listed, []string{"organization", "rbac_group", "user"}) || !slices.Equal(out.Users, []string{"vip@example.com"}) {
		t.Errorf("listed %v (paged one by one), users %v", out.Listed, out.Users)
	}
	if len(out.Effective) != 2 || out.Effective[0].User != "dan@example.com" || out.Effective[0].Amount != "4000" || out.Effective[0].Source != "rbac_group" {
		t.Errorf("effective %+v", out.Effective)
	}
	want := slices.Clone(ids)
	slices.Sort(want)
	if !slices.Equal(out.Pending, want) {
		t.Errorf("pending %v, want %v", out.Pending, want)
	}
	if out.Approved.Status != "approved" || out.Approved.Amount != "9000" || out.Approved.Scope.Type != "user" || out.Approved.Scope.UserID != "dan@example.com" || out.Approved.Summary != "9000" {
		t.Errorf("approved %+v", out.Approved)
	}
	if out.Denied != "denied" || out.RetrievedRequest != "approved" {
		t.Errorf("denied %q, retrieved %q", out.Denied, out.RetrievedRequest)
	}
	if out.DenyApproved != "BadRequestError 400 invalid_request_error" || out.Missing != "NotFoundError 404" ||
		!strings.HasPrefix(out.BadAmount, "BadRequestError 400 amount:") || out.Deleted != "spend_limit_deleted" {
		t.Errorf("errors and delete: %q %q %q %q", out.DenyApproved, out.Missing, out.BadAmount, out.Deleted)
	}
}

// TestOrganizationLimitAcrossInstances: on one PostgreSQL, a $5
// organization limit set through the Spend Limits API holds over two
// instances and two keys together: of twenty $1.05 requests sent at once,
// half to each instance and half with each key, five are admitted.
func TestOrganizationLimitAcrossInstances(t *testing.T) {
	dsn, _, _ := freshSchema(t)
	u := startUpstreams(t, fakes.Options{Chunks: 12, Gap: 120 * time.Millisecond})
	cfg := gatewayConfig{models: dearModels(u), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + dsn.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)
	if st, _, body := a.do(t, "POST", adminapi.SpendLimitsPath, adminKey, `{"amount":"500","scope":{"type":"organization"},"period":"monthly"}`); st != 200 {
		t.Fatalf("setting the organization's limit: %d %s", st, body)
	}
	// Every instance reads the limits with the spend each second.
	for _, g := range []*gateway{a, b} {
		if !testwait.Until(func() bool {
			_, _, me := g.do(t, "GET", "/v1/me", aliceKey, "")
			return strings.Contains(string(me), `"scope":"organization"`)
		}) {
			t.Fatal("an instance never read the organization's limit")
		}
	}
	second := createKey(t, a, `{"name":"second"}`).Value
	waitForKey(t, b, second)
	body := `{"model":"oa","stream":true,"max_tokens":1000,"messages":[{"role":"user","content":"hi"}]}`
	statuses := concurrently(20, func(i int) int {
		g, key := a, aliceKey
		if i%2 == 1 {
			g = b
		}
		if i%4 >= 2 {
			key = second
		}
		status, _, _ := g.do(t, "POST", "/v1/chat/completions", key, body)
		return status
	})
	if statuses[200] != 5 || statuses[429] != 15 {
		t.Fatalf("20 concurrent $1.05 requests from two keys on two instances under a $5 organization limit: %v; want 5 admitted, 15 refused", statuses)
	}
	// The organization stopped: the refusal names its shared limit.
	if st, _, body := a.do(t, "POST", adminapi.SpendLimitsPath, adminKey, `{"amount":"0","scope":{"type":"organization"},"period":"monthly"}`); st != 200 {
		t.Fatalf("stopping the organization: %d %s", st, body)
	}
	var refused []byte
	if !testwait.Until(func() bool {
		_, _, refused = b.do(t, "POST", "/v1/chat/completions", second, body)
		return strings.Contains(string(refused), "the organization") && strings.Contains(string(refused), "shared")
	}) {
		t.Errorf("the refusal does not name the organization's shared limit: %s", refused)
	}
}
