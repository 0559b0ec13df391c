package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// What the scripted OpenAI-compatible backend makes Claude Code do.
const (
	toolMarker     = "modelgate-tool-ran"
	toolCommand    = "echo " + toolMarker + " > marker.txt"
	toolCallPrefix = "call_modelgate_"
	finalReply     = "Done: the marker file is written."
	upstreamKey    = "upstream-scripted-secret"
)

// scriptedRequest is the part of an OpenAI chat request the script reads.
type scriptedRequest struct {
	Model     string `json:"model"`
	Stream    *bool  `json:"stream"`
	MaxTokens int64  `json:"max_tokens"`
	User      string `json:"user"`
	Messages  []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolName   string          `json:"tool_name"` // Ollama's
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	} `json:"tools"`
}

func (r *scriptedRequest) toolNames() []string {
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Function.Name)
	}
	return names
}

// streams applies each format's default: OpenAI buffers, Ollama streams.
func (r *scriptedRequest) streams(ollama bool) bool {
	if r.Stream == nil {
		return ollama
	}
	return *r.Stream
}

// toolResult returns the content of the last tool message answering a
// call of the script's, if the request carries one. OpenAI's names the
// call's id; Ollama calls have no id, so its tool message names the tool.
func (r *scriptedRequest) toolResult() (id, content string, ok bool) {
	for _, m := range r.Messages {
		if m.Role == "tool" && (strings.HasPrefix(m.ToolCallID, toolCallPrefix) || m.ToolName == "Bash") {
			var s string
			if json.Unmarshal(m.Content, &s) != nil {
				s = string(m.Content)
			}
			id, content, ok = m.ToolCallID, s, true
		}
	}
	return id, content, ok
}

type scriptedCall struct {
	header http.Header
	path   string
	req    scriptedRequest
	raw    []byte
}

// scriptedBackend is an OpenAI-compatible server (POST …/chat/completions)
// and an Ollama server (POST /api/chat) that drives Claude Code through one
// tool round trip: a request offering Bash with no tool result yet gets a
// Bash call writing marker.txt; a request carrying the result gets
// finalReply; anything else (background requests without tools) gets plain
// text. It streams when asked, as Claude Code always does.
type scriptedBackend struct {
	// pick chooses the tool to call among the offered ones and its
	// arguments; nil is shellCall.
	pick func(tools []string) (name, args string)
	// more, when set, reports whether a tool's result calls for another
	// pick (a tool search that loaded the tool to call) rather than the
	// final answer.
	more func(result string) bool
	// distinctIDs gives each answer an id of its own, as real servers
	// do; without it every answer is "chatcmpl-scripted", and Claude Code
	// merges answers of one id into one assistant message.
	distinctIDs bool
	mu          sync.Mutex
	calls       []scriptedCall
	n           int
}

func (s *scriptedBackend) requests() []scriptedCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

func (s *scriptedBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var raw bytes.Buffer
	_, _ = raw.ReadFrom(r.Body)
	var req scriptedRequest
	ollama := r.URL.Path == "/api/chat"
	if r.Method != http.MethodPost || !ollama && !strings.HasSuffix(r.URL.Path, "/chat/completions") || json.Unmarshal(raw.Bytes(), &req) != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"scripted fake: not a chat completions request","type":"invalid_request_error","param":null,"code":null}}`))
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, scriptedCall{header: r.Header.Clone(), path: r.URL.Path, req: req, raw: raw.Bytes()})
	s.n++
	callID := fmt.Sprintf("%s%d", toolCallPrefix, s.n)
	answerID := "chatcmpl-scripted"
	if s.distinctIDs {
		answerID = fmt.Sprintf("chatcmpl-scripted-%d", s.n)
	}
	s.mu.Unlock()

	text, args := "ok", ""
	tool := "Bash"
	if _, result, done := req.toolResult(); done && (s.more == nil || !s.more(result)) {
		text = finalReply
	} else if s.pick != nil {
		tool, args = s.pick(req.toolNames())
	} else {
		tool, args = shellCall(req.toolNames())
	}
	if ollama {
		serveOllamaScript(w, &req, text, args)
		return
	}
	usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, scriptedIn, scriptedOut, scriptedIn+scriptedOut)
	w.Header().Set("X-Request-Id", "req_scripted")
	if !req.streams(false) {
		msg := fmt.Sprintf(`{"role":"assistant","content":%q}`, text)
		finish := "stop"
		if args != "" {
			msg = fmt.Sprintf(`{"role":"assistant","content":null,"tool_calls":[{"id":%q,"type":"function","function":{"name":%q,"arguments":%q}}]}`, callID, tool, args)
			finish = "tool_calls"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":%q,"object":"chat.completion","created":1730000000,"model":%q,"choices":[{"index":0,"message":%s,"finish_reason":%q}],"usage":%s}`,
			answerID, req.Model, msg, finish, usage)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	rc := http.NewResponseController(w)
	chunk := func(delta, finish string) {
		f := "null"
		if finish != "" {
			f = `"` + finish + `"`
		}
		fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1730000000,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", answerID, req.Model, delta, f)
		_ = rc.Flush()
	}
	chunk(`{"role":"assistant","content":""}`, "")
	if args != "" {
		chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"id":%q,"type":"function","function":{"name":%q,"arguments":""}}]}`, callID, tool), "")
		// Arguments arrive in pieces, as real servers send them.
		half := len(args) / 2
		for _, part := range []string{args[:half], args[half:]} {
			chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%q}}]}`, part), "")
		}
		chunk(`{}`, "tool_calls")
	} else {
		for _, word := range strings.SplitAfter(text, " ") {
			chunk(fmt.Sprintf(`{"content":%q}`, word), "")
		}
		chunk(`{}`, "stop")
	}
	fmt.Fprintf(w, "data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1730000000,\"model\":%q,\"choices\":[],\"usage\":%s}\n\n", answerID, req.Model, usage)
	_, _ = w.Write([]byte("data: [DONE]\n\n"))
	_ = rc.Flush()
}

// shellCall picks the agent's shell tool among the offered ones and the
// arguments that make it write the marker file: Claude Code's Bash, or
// Codex's exec_command (0.169), shell_command or shell (older builds).
func shellCall(tools []string) (name, args string) {
	var a []byte
	switch {
	case slices.Contains(tools, "Bash"):
		name = "Bash"
		a, _ = json.Marshal(map[string]string{"command": toolCommand, "description": "Write the marker file"})
	case slices.Contains(tools, "exec_command"):
		name = "exec_command"
		a, _ = json.Marshal(map[string]string{"cmd": toolCommand})
	case slices.Contains(tools, "shell_command"):
		name = "shell_command"
		a, _ = json.Marshal(map[string]string{"command": toolCommand})
	case slices.Contains(tools, "run_shell_command"): // Gemini CLI
		name = "run_shell_command"
		a, _ = json.Marshal(map[string]string{"command": toolCommand, "description": "Write the marker file"})
	case slices.Contains(tools, "bash"): // opencode
		name = "bash"
		a, _ = json.Marshal(map[string]string{"command": toolCommand, "description": "Write the marker file"})
	case slices.Contains(tools, "shell"):
		name = "shell"
		a, _ = json.Marshal(map[string][]string{"command": {"bash", "-lc", toolCommand}})
	default:
		return "", ""
	}
	return name, string(a)
}

// Usage every scripted answer reports.
const scriptedIn, scriptedOut = 120, 8

// serveOllamaScript answers in Ollama's native format: NDJSON lines, the
// tool call whole in one line with its arguments as an object, the
// counters on the final line.
func serveOllamaScript(w http.ResponseWriter, req *scriptedRequest, text, args string) {
	final := fmt.Sprintf(`"done":true,"done_reason":"stop","prompt_eval_count":%d,"eval_count":%d`, scriptedIn, scriptedOut)
	msg := fmt.Sprintf(`{"role":"assistant","content":%q}`, text)
	if args != "" {
		msg = fmt.Sprintf(`{"role":"assistant","content":"","tool_calls":[{"function":{"name":"Bash","arguments":%s}}]}`, args)
	}
	if !req.streams(true) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"model":%q,"created_at":"2025-07-07T20:22:19.18Z","message":%s,%s}`, req.Model, msg, final)
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	rc := http.NewResponseController(w)
	fmt.Fprintf(w, "{\"model\":%q,\"created_at\":\"2025-07-07T20:22:19.18Z\",\"message\":%s,\"done\":false}\n", req.Model, msg)
	_ = rc.Flush()
	fmt.Fprintf(w, "{\"model\":%q,\"created_at\":\"2025-07-07T20:22:19.18Z\",\"message\":{\"role\":\"assistant\",\"content\":\"\"},%s}\n", req.Model, final)
	_ = rc.Flush()
}

// claudeResult is the part of `claude -p --output-format json` the test reads.
type claudeResult struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	IsError   bool   `json:"is_error"`
	Result    string `json:"result"`
	SessionID string `json:"session_id"`
	NumTurns  int    `json:"num_turns"`
}

// claudeRun is one `claude -p` invocation.
type claudeRun struct {
	prompt string
	dir    string
	env    []string // on top of PATH and HOME
	args   []string
}

// runClaude runs Claude Code in print mode with a private HOME, so the
// user's own settings, credentials and history never take part.
func runClaude(t *testing.T, claude string, run claudeRun) claudeResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	args := append([]string{"-p", run.prompt, "--output-format", "json", "--setting-sources", "local"}, run.args...)
	cmd := exec.CommandContext(ctx, claude, args...)
	cmd.Dir = run.dir
	cmd.Env = append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + t.TempDir(),
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_AUTOUPDATER=1",
	}, run.env...)
	// Bash tool children may hold the pipes open after a kill.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	t.Logf("claude stdout: %s", stdout.String())
	if stderr.Len() > 0 {
		t.Logf("claude stderr: %s", stderr.String())
	}
	if err != nil {
		t.Fatalf("claude -p: %v", err)
	}
	var res claudeResult
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil {
		t.Fatalf("claude output is not one JSON result: %v", err)
	}
	if res.IsError || res.Subtype != "success" {
		t.Fatalf("claude reported an error: %+v", res)
	}
	return res
}

// TestClaudeCodeThroughGateway runs the real Claude Code through the real
// gateway: a turn answered by the echo/ backend, and two tool round trips
// through an OpenAI-compatible backend (model chosen once by
// ANTHROPIC_MODEL, once by model_aliases) where Bash must really run. The
// ledger must hold every turn under Claude Code's session id.
func TestClaudeCodeThroughGateway(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	script := &scriptedBackend{}
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	models := fmt.Sprintf(`model_list:
  - model_name: local-coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
  - model_name: ollama-coder
    proxy_params:
      model: ollama/scripted-llama
      api_base: %s
  - model_name: echo
    proxy_params:
      model: echo/echo
model_aliases:
  "claude-*": local-coder
`, up.URL, upstreamKey, up.URL)
	g := startGateway(t, gatewayConfig{models: models})

	sessions := map[string]string{} // subtest → Claude Code session id
	upstreamCalls := map[string]int{}
	aliasOf := map[string]string{"echo": "echo"}

	t.Run("echo", func(t *testing.T) {
		prompt := "modelgate echo check 4217"
		res := runClaude(t, claude, claudeRun{prompt: prompt, dir: t.TempDir(), env: []string{
			"ANTHROPIC_BASE_URL=" + g.base,
			"ANTHROPIC_AUTH_TOKEN=" + aliceKey,
			"ANTHROPIC_MODEL=echo",
		}})
		if !strings.Contains(res.Result, prompt) {
			t.Errorf("result %q does not echo the prompt", res.Result)
		}
		if len(script.requests()) != 0 {
			t.Errorf("the echo turn reached the OpenAI backend")
		}
		sessions["echo"] = res.SessionID
	})

	for _, tc := range []struct {
		name   string
		env    []string
		alias  string
		path   string // where the gateway sends it upstream
		model  string // the deployment's upstream model
		bearer string // Authorization the upstream must see
	}{
		// The alias named directly, authenticated as Claude Code does with
		// a gateway token.
		{"tool/ANTHROPIC_MODEL", []string{"ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=local-coder"},
			"local-coder", "/v1/chat/completions", "scripted-coder", "Bearer " + upstreamKey},
		// Claude Code's own model names, mapped by model_aliases; the key
		// as an API key (x-api-key).
		{"tool/model_aliases", []string{"ANTHROPIC_API_KEY=" + aliceKey},
			"local-coder", "/v1/chat/completions", "scripted-coder", "Bearer " + upstreamKey},
		// Ollama's native API: translated twice on the way back.
		{"tool/ollama", []string{"ANTHROPIC_AUTH_TOKEN=" + aliceKey, "ANTHROPIC_MODEL=ollama-coder"},
			"ollama-coder", "/api/chat", "scripted-llama", ""},
	} {
		aliasOf[tc.name] = tc.alias
		t.Run(tc.name, func(t *testing.T) {
			before := len(script.requests())
			dir := t.TempDir()
			res := runClaude(t, claude, claudeRun{
				prompt: "Create the marker file with the Bash tool, then say you are done.",
				dir:    dir,
				env:    append([]string{"ANTHROPIC_BASE_URL=" + g.base}, tc.env...),
				// Bash runs without a permission prompt; nothing else is needed.
				args: []string{"--allowedTools", "Bash"},
			})
			marker, err := os.ReadFile(filepath.Join(dir, "marker.txt"))
			if err != nil {
				t.Fatalf("the Bash tool did not run: %v", err)
			}
			if got := strings.TrimSpace(string(marker)); got != toolMarker {
				t.Errorf("marker.txt = %q, want %q", got, toolMarker)
			}
			if !strings.Contains(res.Result, finalReply) {
				t.Errorf("result %q lacks the backend's final text %q", res.Result, finalReply)
			}
			if res.NumTurns < 2 {
				t.Errorf("num_turns = %d, want at least 2 (tool call, then answer)", res.NumTurns)
			}

			calls := script.requests()[before:]
			upstreamCalls[tc.name] = len(calls)
			var offered, answered bool
			for i, c := range calls {
				var roles []string
				for _, m := range c.req.Messages {
					roles = append(roles, m.Role)
				}
				t.Logf("upstream request %d: %s model %q, stream %v, max_tokens %d, user %q, roles %v, %d tools",
					i, c.path, c.req.Model, c.req.streams(tc.path == "/api/chat"), c.req.MaxTokens, c.req.User, roles, len(c.req.Tools))
				if c.path != tc.path || c.req.Model != tc.model {
					t.Errorf("upstream request %d: path %q model %q, want %s and %s", i, c.path, c.req.Model, tc.path, tc.model)
				}
				if got := c.header.Get("Authorization"); got != tc.bearer {
					t.Errorf("upstream request %d carries Authorization %q, want %q (the deployment's, never the gateway key)", i, got, tc.bearer)
				}
				if slices.Contains(c.req.toolNames(), "Bash") {
					offered = true
				}
				if id, content, ok := c.req.toolResult(); ok {
					answered = true
					t.Logf("tool result for %s: %q", id, content)
				}
			}
			if !offered || !answered {
				t.Errorf("upstream saw Bash offered: %v, a tool result: %v", offered, answered)
			}
			sessions[tc.name] = res.SessionID
		})
	}
	if t.Failed() {
		return
	}

	recs := g.ledgerRecords(t)
	bySession := map[string][]ledger.Record{}
	for _, r := range recs {
		bySession[r.SessionID] = append(bySession[r.SessionID], r)
	}
	for name, sid := range sessions {
		got := bySession[sid]
		t.Logf("%s: session %s, %d ledger records", name, sid, len(got))
		if sid == "" || len(got) == 0 {
			t.Errorf("%s: no ledger record under session %q; sessions recorded: %v", name, sid, keys(bySession))
			continue
		}
		wantAlias, wantN := aliasOf[name], upstreamCalls[name]
		if name == "echo" {
			wantN = 1
		}
		if len(got) != wantN {
			t.Errorf("%s: %d ledger records, want %d", name, len(got), wantN)
		}
		for _, r := range got {
			if r.Alias != wantAlias || r.Endpoint != "messages" || r.Outcome != "ok" || r.KeyID != "alice" || !r.Stream {
				t.Errorf("%s: record %+v", name, r)
			}
			if name != "echo" && (r.InputTokens != scriptedIn || r.OutputTokens != scriptedOut) {
				t.Errorf("%s: usage %d/%d, want the backend's %d/%d", name, r.InputTokens, r.OutputTokens, scriptedIn, scriptedOut)
			}
		}
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
