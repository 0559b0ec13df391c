package admin

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// tripped is a breaker with session s1 of key alice held by action.
func tripped(t *testing.T, action string) *breaker.Breaker {
	t.Helper()
	b := breaker.New(breaker.Options{})
	msgs := `{"role":"user","content":"go"}`
	for i := range 2 {
		msgs += fmt.Sprintf(`,{"role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Read","input":{"file_path":"/a"}}]}`+
			`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"same"}]}`, i, i)
		b.Admit(context.Background(), &breaker.Turn{Format: breaker.FormatMessages, Body: []byte(`{"messages":[` + msgs + `]}`), Session: "s1", KeyID: "alice",
			Rules: &ledger.BreakerRules{Repeat: 2, Action: action}})
	}
	if st, ok, _ := b.Status(context.Background(), "alice", "s1"); !ok || st.State == "watching" {
		t.Fatalf("the session was not held: %+v", st)
	}
	return b
}

func resume(a *Handler, id *policy.Identity, query string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, SessionsPath+"/s1/resume"+query, nil)
	req = req.WithContext(policy.WithIdentity(req.Context(), id))
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	return rec
}

// TestResumeSession: a key resumes its own paused session (not another
// key's, not a stop); an admin clears a stop; a session not held is a 404.
func TestResumeSession(t *testing.T) {
	alice := &policy.Identity{KeyID: "alice", Role: policy.RoleUser}
	bob := &policy.Identity{KeyID: "bob", Role: policy.RoleUser}
	admin := &policy.Identity{KeyID: "admin", Role: policy.RoleAdmin}

	a := &Handler{Breaker: tripped(t, breaker.ActionPause)}
	if rec := resume(a, bob, "?api_key_id=alice"); rec.Code != http.StatusForbidden {
		t.Fatalf("another key resumed alice's session: %d %s", rec.Code, rec.Body)
	}
	if rec := resume(a, bob, ""); rec.Code != http.StatusNotFound {
		t.Fatalf("bob's own (unknown) session: %d %s", rec.Code, rec.Body)
	}
	if rec := resume(a, alice, ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"was":"pause"`) {
		t.Fatalf("alice resuming her pause: %d %s", rec.Code, rec.Body)
	}
	if rec := resume(a, alice, ""); rec.Code != http.StatusNotFound {
		t.Fatalf("resuming twice: %d %s", rec.Code, rec.Body)
	}

	a = &Handler{Breaker: tripped(t, breaker.ActionStop)}
	if rec := resume(a, alice, ""); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "only an admin") {
		t.Fatalf("alice clearing a stop: %d %s", rec.Code, rec.Body)
	}
	if rec := resume(a, admin, "?api_key_id=alice"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"was":"stop"`) {
		t.Fatalf("an admin clearing a stop: %d %s", rec.Code, rec.Body)
	}
	req := httptest.NewRequest(http.MethodGet, SessionsPath+"/s1/resume", nil)
	req = req.WithContext(policy.WithIdentity(req.Context(), admin))
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, req)
	if rec.Code != http.StatusMethodNotAllowed {
		t.Fatalf("GET resume: %d", rec.Code)
	}
}
