package integration

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

type sessionsPage struct {
	Data []struct {
		ID          string  `json:"id"`
		Agent       *string `json:"agent"`
		APIKeyID    string  `json:"api_key_id"`
		WorkspaceID *string `json:"workspace_id"`
		Requests    int64   `json:"requests"`
		Tokens      struct {
			UncachedInput int64 `json:"uncached_input"`
			CacheRead     int64 `json:"cache_read"`
			Output        int64 `json:"output"`
		} `json:"tokens"`
		Cost struct {
			Amount   string `json:"amount"`
			Currency string `json:"currency"`
		} `json:"cost"`
	} `json:"data"`
	HasMore  bool    `json:"has_more"`
	NextPage *string `json:"next_page"`
}

// TestSessionsAndOwnReports: sessions of every agent are listed by cost
// with their agent, key and use; a regular key sees only its own sessions
// and its own rows of the usage report.
func TestSessionsAndOwnReports(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.pricedModels()})
	chat := func(key string, headers ...string) {
		t.Helper()
		model := "oa"
		if key == bobKey {
			model = "llama" // bob may use echo and llama only
		}
		if status, _, body := g.do(t, "POST", "/v1/chat/completions", key, `{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`, headers...); status != 200 {
			t.Fatalf("%d %s", status, body)
		}
	}
	chat(aliceKey, "X-Claude-Code-Session-Id", "claude-sess-1")
	chat(aliceKey, "X-Claude-Code-Session-Id", "claude-sess-1")
	chat(aliceKey, "Session-Id", "codex-thread-1", "Originator", "codex_exec")
	chat(bobKey, "X-Session-Id", "opencode-1", "User-Agent", "opencode/1.0")
	chat(bobKey) // no session: counted in reports, not as a session

	var page sessionsPage
	deadline := time.Now().Add(3 * time.Second)
	for {
		status, _, body := g.do(t, "GET", "/v1/organizations/sessions", adminKey, "")
		if status != 200 || json.Unmarshal(body, &page) != nil {
			t.Fatalf("sessions: %d %s", status, body)
		}
		if len(page.Data) == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(page.Data) != 3 {
		t.Fatalf("sessions: %+v", page)
	}
	first := page.Data[0]
	if first.ID != "claude-sess-1" || first.Agent == nil || *first.Agent != "claude-code" || first.APIKeyID != "alice" ||
		first.WorkspaceID == nil || *first.WorkspaceID != "frontend" || first.Requests != 2 ||
		first.Tokens.UncachedInput != 2*(fakes.OpenAIPromptTokens-fakes.OpenAICachedTokens) || first.Tokens.Output != 2*fakes.OpenAICompletionTokens ||
		first.Cost.Currency != "USD" || first.Cost.Amount == "0" {
		t.Errorf("dearest session %+v", first)
	}
	agents := map[string]string{}
	for _, s := range page.Data {
		agents[s.ID] = *s.Agent
	}
	if agents["codex-thread-1"] != "codex" || agents["opencode-1"] != "opencode" {
		t.Errorf("agents %v", agents)
	}
	status, _, body := g.do(t, "GET", "/v1/organizations/sessions?limit=1", adminKey, "")
	var one sessionsPage
	if json.Unmarshal(body, &one) != nil || status != 200 || len(one.Data) != 1 || !one.HasMore || one.NextPage == nil {
		t.Errorf("limit=1: %d %s", status, body)
	}

	// Alice sees her sessions and her rows, whatever she asks for.
	_, _, body = g.do(t, "GET", "/v1/organizations/sessions?api_key_ids[]=bob", aliceKey, "")
	var mine sessionsPage
	if json.Unmarshal(body, &mine) != nil || len(mine.Data) != 2 {
		t.Errorf("alice's sessions: %s", body)
	}
	for _, s := range mine.Data {
		if s.APIKeyID != "alice" {
			t.Errorf("alice sees %s's session", s.APIKeyID)
		}
	}
	day := time.Now().UTC().Truncate(24 * time.Hour).Format(time.RFC3339)
	status, _, body = g.do(t, "GET", "/v1/organizations/usage_report/messages?starting_at="+day+"&group_by[]=api_key_id", aliceKey, "")
	if status != 200 || strings.Contains(string(body), `"api_key_id":"bob"`) || !strings.Contains(string(body), `"api_key_id":"alice"`) {
		t.Errorf("alice's usage report: %d %s", status, body)
	}
	if status, _, body := g.do(t, "GET", "/v1/organizations/sessions?colour=red", adminKey, ""); status != 400 || !strings.Contains(string(body), "colour") {
		t.Errorf("unknown parameter: %d %s", status, body)
	}

	// The claude_code report: Claude Code's traffic only, per key.
	status, _, body = g.do(t, "GET", "/v1/organizations/usage_report/claude_code?starting_at="+day[:10], adminKey, "")
	var cc struct {
		Data []struct {
			Actor struct {
				Type       string `json:"type"`
				APIKeyName string `json:"api_key_name"`
			} `json:"actor"`
			OrganizationID string `json:"organization_id"`
			CoreMetrics    struct {
				NumSessions int `json:"num_sessions"`
			} `json:"core_metrics"`
			ModelBreakdown []struct {
				Model  string `json:"model"`
				Tokens struct {
					Input, Output, CacheRead int64
				} `json:"tokens"`
				EstimatedCost struct {
					Amount float64 `json:"amount"`
				} `json:"estimated_cost"`
			} `json:"model_breakdown"`
		} `json:"data"`
		HasMore bool `json:"has_more"`
	}
	if status != 200 || json.Unmarshal(body, &cc) != nil || len(cc.Data) != 1 {
		t.Fatalf("claude_code report: %d %s", status, body)
	}
	r0 := cc.Data[0]
	if r0.Actor.Type != "api_actor" || r0.Actor.APIKeyName != "alice" || r0.CoreMetrics.NumSessions != 1 || len(r0.OrganizationID) != 36 ||
		len(r0.ModelBreakdown) != 1 || r0.ModelBreakdown[0].Model != "oa" || r0.ModelBreakdown[0].Tokens.Output != 2*fakes.OpenAICompletionTokens ||
		r0.ModelBreakdown[0].EstimatedCost.Amount <= 0 {
		t.Errorf("claude_code record: %s", body)
	}
	if status, _, body := g.do(t, "GET", "/v1/organizations/usage_report/claude_code?starting_at=yesterday", adminKey, ""); status != 400 || !strings.Contains(string(body), "starting_at") {
		t.Errorf("bad day: %d %s", status, body)
	}
}
