package agenthook

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/workctx"
)

// A UserPromptSubmit event posts the working directory's repository
// (credentials stripped on this side already), branch and head to the
// gateway with the agent's key, writes nothing to stdout and posts no
// chat message.
func TestContextEventPostsWorkContext(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	for _, args := range [][]string{
		{"init", "-q", "-b", "feat/ABC-7-x"},
		{"-c", "user.email=a@b.c", "-c", "user.name=a", "commit", "-q", "--allow-empty", "-m", "one"},
		{"remote", "add", "origin", "https://bot:ghp_SECRET@github.com/Acme/Shop.git"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	var mu sync.Mutex
	var got []workctx.Context
	var auth []string
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path != workctx.Path || strings.Contains(string(b), "SECRET") {
			t.Errorf("gateway got %s %s", r.URL.Path, b)
		}
		var c workctx.Context
		_ = json.Unmarshal(b, &c)
		mu.Lock()
		got, auth = append(got, c), append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	defer gw.Close()
	chat := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { t.Error("chat webhook called") }))
	defer chat.Close()
	env := map[string]string{"ANTHROPIC_BASE_URL": gw.URL, "ANTHROPIC_AUTH_TOKEN": "alice-key", "CHAT_WEBHOOK_URL": chat.URL}
	ev, _ := json.Marshal(map[string]string{"hook_event_name": "UserPromptSubmit", "session_id": "sess-1", "cwd": dir, "prompt": "hi"})
	var stderr bytes.Buffer
	Run(Options{Stdin: bytes.NewReader(ev), Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
	if stderr.Len() > 0 {
		t.Errorf("stderr: %s", stderr.String())
	}
	if len(got) != 1 || got[0].SessionID != "sess-1" || got[0].Repository != "github.com/acme/shop" || got[0].Branch != "feat/ABC-7-x" ||
		len(got[0].Head) != 40 || auth[0] != "Bearer alice-key" {
		t.Fatalf("posted %+v with %v", got, auth)
	}
}

// Without a gateway in the environment, or outside a repository, the hook
// posts nothing and says why on stderr only when there was something to
// say.
func TestContextEventWithoutGateway(t *testing.T) {
	ev := []byte(`{"hook_event_name":"SessionStart","session_id":"s","cwd":"/nonexistent"}`)
	var stderr bytes.Buffer
	Run(Options{Stdin: bytes.NewReader(ev), Stderr: &stderr, Getenv: func(string) string { return "" }})
	if stderr.Len() != 0 {
		t.Errorf("stderr without a gateway: %s", stderr.String())
	}
	env := map[string]string{"MODELGATE_URL": "http://127.0.0.1:1", "MODELGATE_API_KEY": "k"}
	Run(Options{Stdin: bytes.NewReader(ev), Stderr: &stderr, Getenv: func(k string) string { return env[k] }})
	if !strings.Contains(stderr.String(), "no git remote") {
		t.Errorf("stderr outside a repository: %q", stderr.String())
	}
}

// Codex's hooks go to .codex/hooks.json, Gemini CLI's to
// .gemini/settings.json with its BeforeAgent event and a timeout in
// milliseconds.
func TestInstallForOtherAgents(t *testing.T) {
	project := t.TempDir()
	for _, tc := range []struct {
		agent     AgentKind
		file      string
		events    []string
		timeout   float64
		notEvents []string
	}{
		{AgentCodex, ".codex/hooks.json", []string{"SessionStart", "UserPromptSubmit", "Stop"}, 10, []string{"Notification"}},
		{AgentGemini, ".gemini/settings.json", []string{"SessionStart", "BeforeAgent"}, 10000, []string{"Stop", "UserPromptSubmit"}},
	} {
		path, err := SettingsPathFor(tc.agent, false, project, "", "")
		if err != nil || path != filepath.Join(project, tc.file) {
			t.Fatalf("%s: path %q %v", tc.agent.Name, path, err)
		}
		if _, err := InstallFor(tc.agent, path, nil, "/bin/caddy agent-hook"); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(path)
		var m struct {
			Hooks map[string][]struct {
				Hooks []struct {
					Command string  `json:"command"`
					Timeout float64 `json:"timeout"`
				} `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		for _, ev := range tc.events {
			if g := m.Hooks[ev]; len(g) != 1 || g[0].Hooks[0].Command != "/bin/caddy agent-hook" || g[0].Hooks[0].Timeout != tc.timeout {
				t.Errorf("%s %s: %s", tc.agent.Name, ev, b)
			}
		}
		for _, ev := range tc.notEvents {
			if _, ok := m.Hooks[ev]; ok {
				t.Errorf("%s registered %s", tc.agent.Name, ev)
			}
		}
	}
	if _, err := AgentKindNamed("cursor"); err == nil {
		t.Error("an unknown agent was accepted")
	}
}

// With no key in the environment (an agent whose apiKeyHelper runs
// `caddy modelgate login --print-key`), the context goes with the stored
// login's key to its gateway.
func TestContextEventWithStoredLogin(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"remote", "add", "origin", "git@github.com:acme/shop.git"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	got := make(chan string, 1)
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r.Header.Get("Authorization") + " " + string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer gw.Close()
	ev := []byte(`{"hook_event_name":"SessionStart","session_id":"s-9","cwd":` + strconvQuote(dir) + `}`)
	var stderr bytes.Buffer
	Run(Options{Stdin: bytes.NewReader(ev), Stderr: &stderr, Getenv: func(string) string { return "" },
		Login: func(context.Context) (string, string, *http.Client, error) {
			return gw.URL + "/", "person-key", gw.Client(), nil
		}})
	select {
	case s := <-got:
		if !strings.HasPrefix(s, "Bearer person-key ") || !strings.Contains(s, `"repository":"github.com/acme/shop"`) || !strings.Contains(s, `"branch":"main"`) {
			t.Errorf("posted %s", s)
		}
	default:
		t.Fatalf("nothing posted; stderr %q", stderr.String())
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }
