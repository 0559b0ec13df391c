package handlers

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/secretscan/secrettest"
)

// hostileToolUse is hostile review 4's request: a Messages turn whose tool
// call carries input.
func hostileToolUse(alias, input string) string {
	return `{"model":"` + alias + `","max_tokens":5,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"cfg","input":` +
		input + `}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"ok"}]}]}`
}

// TestSecretsInToolArgumentNamesAndIDs: a secret as a tool argument's
// name, or as the value of arguments named id and status, reaches no
// upstream (hostile review 4, finding 7), whichever format it goes to.
func TestSecretsInToolArgumentNamesAndIDs(t *testing.T) {
	s := newSecretsSetup(t, "redact", fakes.Options{})
	pat := secrettest.Corpus(5)[8].Value
	for _, alias := range []string{"oa", "an", "ge"} {
		for _, input := range []string{`{"` + pat + `":1}`, `{"id":"` + pat + `","status":"` + pat + `"}`} {
			rr := post(s.g, alice, "/v1/messages", hostileToolUse(alias, input), "Anthropic-Version", "2023-06-01")
			if rr.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", alias, rr.Code, rr.Body)
			}
		}
	}
	for name, rec := range map[string]*fakes.Recorder{"openai": s.openai, "anthropic": s.anth, "gemini": s.gem} {
		if rec.Count() != 2 {
			t.Fatalf("%s upstream got %d requests, want 2", name, rec.Count())
		}
		for _, r := range rec.Requests() {
			if strings.Contains(string(r.Body), pat[4:20]) {
				t.Errorf("%s upstream got the token: %s", name, r.Body)
			}
			if !strings.Contains(string(r.Body), "[REDACTED:github-pat:") {
				t.Errorf("%s upstream: no placeholder: %s", name, r.Body)
			}
		}
	}
}

// TestSecretsBlockNamesNoValue: a block whose secret sits under a member
// named by another secret names neither in its answer nor in what it
// reports (hostile review 4, finding 8).
func TestSecretsBlockNamesNoValue(t *testing.T) {
	s := newSecretsSetup(t, "block", fakes.Options{})
	creds := secrettest.Corpus(5)
	pat, aws := creds[8].Value, creds[3].Value
	rr := post(s.g, alice, "/v1/messages", hostileToolUse("an", `{"`+pat+`":"`+aws+`"}`), "Anthropic-Version", "2023-06-01")
	var refusal struct {
		Error struct{ Message string } `json:"error"`
	}
	if rr.Code != http.StatusBadRequest || json.Unmarshal(rr.Body.Bytes(), &refusal) != nil ||
		!strings.Contains(refusal.Error.Message, "was found at messages[1].content[0].input.<member 0> (tool call toolu_1)") {
		t.Fatalf("%d %s", rr.Code, rr.Body)
	}
	if k := secrettest.Leaked(rr.Body.String(), []secrettest.Credential{creds[8], creds[3]}); k != "" {
		t.Fatalf("the refusal carries %s: %s", k, rr.Body)
	}
	evs := s.Events()
	if len(evs) != 2 {
		t.Fatalf("events %+v", evs)
	}
	for _, e := range evs {
		if w := e.Location.String(); strings.Contains(w, pat[4:16]) || strings.Contains(w, aws[4:16]) {
			t.Fatalf("event where %q carries a secret", w)
		}
	}
	if n := s.openai.Count() + s.anth.Count() + s.gem.Count(); n != 0 {
		t.Fatalf("%d requests reached an upstream", n)
	}
}
