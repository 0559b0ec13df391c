package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/internal/testlane"
	"github.com/modelgate/modelgate/internal/testwait"
)

// breakerModels routes Claude Code's model names to the scripted
// OpenAI-compatible backend.
func breakerModels(up string) string {
	return fmt.Sprintf(`model_list:
  - model_name: local-coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
model_aliases:
  "claude-*": local-coder
`, up, upstreamKey)
}

// breakerGateway starts a gateway whose workspace frontend (alice's) has
// the breaker block rules, routes to script, and posts to hook (nil: a
// chat sink of its own); extra lines go in the modelgate block, env into
// the gateway's.
func breakerGateway(t *testing.T, script *scriptedBackend, rules, extra string, hook *chatSink, env ...string) (*gateway, *chatSink) {
	t.Helper()
	up := httptest.NewServer(script)
	t.Cleanup(up.Close)
	if hook == nil {
		hook = startChatSink(t)
	}
	g := startGateway(t, gatewayConfig{models: breakerModels(up.URL),
		ledgerLine: "ledger sqlite " + filepath.Join(t.TempDir(), "ledger.db") + extra + "\n\t\talerts_webhook {env.HOOK}\n\t\tpublic_url " + gatewayBaseURL,
		env:        append([]string{"HOOK=" + hook.URL + "/services/T/B/secret"}, env...),
		siteExtra:  "handle /metrics {\n\t\tmetrics\n\t}",
		authExtra:  "workspace frontend {\n\t\t\tbreaker " + rules + "\n\t\t}"})
	return g, hook
}

// runClaudeRaw runs Claude Code in print mode and returns its result, or
// the error it ended with, without failing the test.
func runClaudeRaw(t *testing.T, claude string, run claudeRun) (claudeResult, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"-p", run.prompt, "--output-format", "json", "--setting-sources", "local"}, run.args...)
	cmd := exec.CommandContext(ctx, claude, args...)
	cmd.Dir = run.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1"}, run.env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	t.Logf("claude stdout: %s", stdout.String())
	if stderr.Len() > 0 {
		t.Logf("claude stderr: %s", stderr.String())
	}
	var res claudeResult
	_ = json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res)
	return res, stdout.String() + stderr.String()
}

// TestBreakerPausesClaudeCodeLoop: real Claude Code against a backend
// that answers every turn with the same failing Bash call. With `action
// pause`, the gateway refuses the session's request that carries the
// fifth identical failure, in Anthropic's error shape, saying why and
// how to resume; one chat line names the key, the agent and the pattern
// and carries a resume link; the session stays paused for Claude Code's
// --resume; the link's page and its button resume it; then the same
// session goes on to its answer. Another session of the same key was
// never held.
func TestBreakerPausesClaudeCodeLoop(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	var loop atomic.Bool
	loop.Store(true)
	failing, _ := json.Marshal(map[string]string{"command": "ls /nonexistent-modelgate-breaker-dir", "description": "List the directory"})
	script := &scriptedBackend{
		pick: func(tools []string) (string, string) {
			if !strings.Contains(strings.Join(tools, ","), "Bash") {
				return "", ""
			}
			return "Bash", string(failing)
		},
		more:        func(string) bool { return loop.Load() },
		distinctIDs: true,
	}
	g, hook := breakerGateway(t, script, "{\n\t\t\t\taction pause\n\t\t\t}", "", nil)
	home, dir := t.TempDir(), t.TempDir()
	env := []string{"HOME=" + home, "ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey}
	run := claudeRun{prompt: "List the directory with the Bash tool until it works.", dir: dir, env: env, args: []string{"--allowedTools", "Bash"}}

	res, out := runClaudeRaw(t, claude, run)
	if !strings.Contains(out, "loop breaker paused this agent session") || !strings.Contains(out, "caddy modelgate resume") {
		for i, c := range script.requests() {
			t.Logf("upstream request %d: %d messages, %d tools", i, len(c.req.Messages), len(c.req.Tools))
		}
		t.Logf("chat: %q", hook.Posts())
		t.Fatalf("Claude Code did not end on the breaker's refusal; its output:\n%s\ngateway log:\n%s", out, tail(g.stderr.String(), 6000))
	}
	sid := res.SessionID
	if sid == "" {
		t.Fatal("no session id in Claude Code's result")
	}
	// The request carrying the fifth identical failure was refused: four
	// reached the backend.
	checkLoopTurns(t, script, 4)
	line := firstPost(t, hook)
	for _, want := range []string{"alice", "claude-code", sid, "`Bash` call", "5 times", "Paused; resume: " + g.base + "/modelgate/breaker/resume?"} {
		if !strings.Contains(line, want) {
			t.Errorf("chat line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "nonexistent-modelgate-breaker-dir") {
		t.Errorf("the chat line carries the tool call's content: %q", line)
	}

	// The session stays paused: Claude Code resuming it is refused.
	resumed := run
	resumed.prompt = "Try again."
	resumed.args = append([]string{"--resume", sid}, run.args...)
	if _, out := runClaudeRaw(t, claude, resumed); !strings.Contains(out, "loop breaker paused this agent session") {
		t.Fatalf("a paused session's next run was not refused:\n%s", out)
	}
	// Another session of the same key goes on.
	if st, _, body := g.do(t, "POST", "/v1/messages", aliceKey, `{"model":"claude-sonnet-4-5","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`,
		"anthropic-version", "2023-06-01", "X-Claude-Code-Session-Id", "another-session"); st != http.StatusOK {
		t.Fatalf("another session of the key: %d %s", st, body)
	}
	// The sessions API shows the state.
	if st, _, body := g.do(t, "GET", "/v1/organizations/sessions?limit=50", adminKey, ""); st != http.StatusOK ||
		!strings.Contains(string(body), `"breaker":{"state":"paused","last_pattern":"repeat"`) {
		t.Errorf("sessions API: %d %s", st, body)
	}

	// The link: GET shows a button and changes nothing, POST resumes.
	link := line[strings.Index(line, g.base+"/modelgate/breaker/resume?"):]
	link = link[:strings.IndexByte(link, ' ')]
	resp, err := http.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	page := readAll(t, resp)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Resume the session") {
		t.Fatalf("the link's page: %d %s", resp.StatusCode, page)
	}
	u, _ := url.Parse(link)
	resp, err = http.PostForm(g.base+u.Path, u.Query())
	if err != nil {
		t.Fatal(err)
	}
	if page := readAll(t, resp); resp.StatusCode != http.StatusOK || !strings.Contains(page, "is resumed") {
		t.Fatalf("resuming through the link: %d %s", resp.StatusCode, page)
	}
	// The link works once per pause.
	resp, _ = http.PostForm(g.base+u.Path, u.Query())
	if page := readAll(t, resp); !strings.Contains(page, "not paused") {
		t.Errorf("a used link: %s", page)
	}

	loop.Store(false)
	res, out = runClaudeRaw(t, claude, resumed)
	if res.IsError || !strings.Contains(res.Result, finalReply) || res.SessionID != sid {
		t.Fatalf("the resumed session did not go on to its answer (session %q, want %q):\n%s", res.SessionID, sid, out)
	}
	if n := len(hook.Posts()); n != 1 {
		t.Errorf("%d chat lines, want the one trip's", n)
	}
	// The trip is in the report, and in the audit log with the resume.
	if st, _, body := g.do(t, "GET", "/v1/organizations/breaker_report", adminKey, ""); st != http.StatusOK ||
		!strings.Contains(string(body), `"pattern":"repeat","action":"pause"`) || !strings.Contains(string(body), `"api_key_id":"alice"`) {
		t.Errorf("breaker report: %d %s", st, body)
	}
	var audit string
	testwait.Until(func() bool {
		_, _, b := g.do(t, "GET", "/v1/organizations/audit_log?limit=50", adminKey, "")
		audit = string(b)
		return strings.Contains(audit, "breaker.trip") && strings.Contains(audit, "breaker.resume")
	})
	if !strings.Contains(audit, "breaker.trip") || !strings.Contains(audit, "breaker.resume") {
		t.Errorf("audit log lacks the trip or the resume: %s", audit)
	}
}

// TestBreakerWarnsOnEditUndoCycle: real Claude Code against a backend that
// edits a file back and forth (a→b, b→a, …). With the default action, the
// breaker posts one chat line on the cycle and lets the run go on to its
// answer; a run that makes progress on the same gateway posts nothing.
func TestBreakerWarnsOnEditUndoCycle(t *testing.T) {
	claude := testbin.ClaudeCode(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "app.txt")
	if err := os.WriteFile(file, []byte("mode = alpha\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var step atomic.Int64
	script := &scriptedBackend{
		pick: func(tools []string) (string, string) {
			if step.Load() >= 100 || !strings.Contains(strings.Join(tools, ","), "Edit") {
				return shellCall(tools)
			}
			n := step.Add(1)
			var a []byte
			switch {
			case n == 1:
				a, _ = json.Marshal(map[string]string{"file_path": file})
				return "Read", string(a)
			case n%2 == 0:
				a, _ = json.Marshal(map[string]string{"file_path": file, "old_string": "mode = alpha", "new_string": "mode = beta"})
			default:
				a, _ = json.Marshal(map[string]string{"file_path": file, "old_string": "mode = beta", "new_string": "mode = alpha"})
			}
			return "Edit", string(a)
		},
		// Eight edits, then the answer.
		more:        func(string) bool { return step.Load() < 9 },
		distinctIDs: true,
	}
	g, hook := breakerGateway(t, script, "", "", nil)
	env := []string{"HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + g.base, "ANTHROPIC_AUTH_TOKEN=" + aliceKey}
	res, out := runClaudeRaw(t, claude, claudeRun{prompt: "Toggle the mode in app.txt.", dir: dir, env: env, args: []string{"--allowedTools", "Read,Edit"}})
	if res.IsError || !strings.Contains(res.Result, finalReply) {
		t.Fatalf("a warned run must go on to its answer:\n%s", out)
	}
	if step.Load() < 9 {
		t.Fatalf("the script made %d tool calls, want 9 (a read and eight edits)", step.Load())
	}
	firstPost(t, hook)
	if posts := hook.Posts(); len(posts) != 1 || !strings.Contains(posts[0], "cycle of 2 turns 3 times") || !strings.Contains(posts[0], res.SessionID) {
		t.Fatalf("chat lines %q, want one naming the cycle and session %s", posts, res.SessionID)
	}

	// A run that makes progress: the marker file written, then the answer.
	before := len(hook.Posts())
	step.Store(100) // the edit script is done: one shell call from here on
	res, out = runClaudeRaw(t, claude, claudeRun{prompt: "Create the marker file with the Bash tool.", dir: t.TempDir(), env: env, args: []string{"--allowedTools", "Bash"}})
	if res.IsError || !strings.Contains(res.Result, finalReply) {
		t.Fatalf("the progressing run failed:\n%s", out)
	}
	if got := hook.Posts(); len(got) != before {
		t.Fatalf("a progressing run was tripped: %q", got[before:])
	}
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return b.String()
}

func tail(s string, n int) string { return s[max(0, len(s)-n):] }

// TestBreakerTwoInstancesOneSession: two gateways on one Redis (`limits
// redis`) serve one agent session's turns in turn; the session trips once
// at the turn its rule names, the chat line arrives once, and the pause
// holds on both instances.
func TestBreakerTwoInstancesOneSession(t *testing.T) {
	redisURL := testlane.RedisURL(t)
	script := &scriptedBackend{}
	hook := startChatSink(t)
	start := func() *gateway {
		g, _ := breakerGateway(t, script, "{\n\t\t\t\trepeat 4\n\t\t\t\taction pause\n\t\t\t}", "\n\t\tlimits redis {env.REDIS_URL}", hook, "REDIS_URL="+redisURL)
		return g
	}
	gws := []*gateway{start(), start()}
	session := fmt.Sprintf("two-instances-%d", time.Now().UnixNano())
	turn := func(g *gateway, n int) (int, string) {
		msgs := `{"role":"user","content":"build it"}`
		for i := range n {
			msgs += fmt.Sprintf(`,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"make"}}]}`+
				`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"Exit code 2\nmake: *** No rule","is_error":true}]}`, i, i)
		}
		st, _, body := g.do(t, "POST", "/v1/messages", aliceKey, `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[`+msgs+`]}`,
			"anthropic-version", "2023-06-01", "X-Claude-Code-Session-Id", session)
		return st, string(body)
	}
	for n := 1; n <= 3; n++ {
		if st, body := turn(gws[n%2], n); st != http.StatusOK {
			t.Fatalf("turn %d on instance %d: %d %s", n, n%2, st, body)
		}
	}
	if st, body := turn(gws[0], 4); st != http.StatusTooManyRequests || !strings.Contains(body, "loop breaker paused") {
		t.Fatalf("the fourth repeat, on instance 0: %d %s", st, body)
	}
	if st, _ := turn(gws[1], 4); st != http.StatusTooManyRequests {
		t.Fatalf("the other instance let the paused session through: %d", st)
	}
	// Each instance counts the trips it made, before it answers: one
	// made it, so only one queued a chat line.
	const trip = `modelgate_breaker_trips_total{action="pause",pattern="repeat"} `
	var counts []string
	for i, g := range gws {
		st, _, body := g.do(t, "GET", "/metrics", adminKey, "")
		line := ""
		for l := range strings.Lines(string(body)) {
			if strings.HasPrefix(l, trip) {
				line = strings.TrimSpace(strings.TrimPrefix(l, trip))
			}
		}
		if st != http.StatusOK || line == "" {
			t.Fatalf("instance %d metrics: %d, no %s", i, st, trip)
		}
		counts = append(counts, line)
	}
	if counts[0] != "1" || counts[1] != "0" {
		t.Fatalf("trips counted by the instances: %v, want [1 0]", counts)
	}
	firstPost(t, hook)
	if posts := hook.Posts(); len(posts) != 1 || !strings.Contains(posts[0], session) {
		t.Fatalf("chat lines %q, want one for session %s", posts, session)
	}

	// `caddy modelgate resume` against one instance frees the session on
	// the other.
	cmd := exec.Command(testbin.Path(t), "modelgate", "resume", session, "--api-key-id", "alice", "--gateway", gws[0].base)
	cmd.Env = append(os.Environ(), "MODELGATE_ADMIN_KEY="+adminKey)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "was pause") {
		t.Fatalf("caddy modelgate resume: %v %s", err, out)
	}
	if st, body := turn(gws[1], 5); st != http.StatusOK {
		t.Fatalf("the resumed session on the other instance: %d %s", st, body)
	}
}

// TestBreakerPausesCodexLoop: real Codex against a backend that answers
// every turn with the same failing shell call. The breaker pauses the
// session (OpenAI's error shape, on the Responses API) and posts one chat
// line naming Codex; Codex stops on the 429.
func TestBreakerPausesCodexLoop(t *testing.T) {
	codex := testbin.Codex(t)
	script := &scriptedBackend{
		pick: func(tools []string) (string, string) {
			name, _ := shellCall(tools)
			var a []byte
			switch name {
			case "exec_command":
				a, _ = json.Marshal(map[string]string{"cmd": "ls /nonexistent-modelgate-breaker-dir"})
			case "":
				return "", ""
			default:
				a, _ = json.Marshal(map[string]string{"command": "ls /nonexistent-modelgate-breaker-dir"})
			}
			return name, string(a)
		},
		more:        func(string) bool { return true },
		distinctIDs: true,
	}
	g, hook := breakerGateway(t, script, "{\n\t\t\t\taction pause\n\t\t\t}", "", nil)
	_, err := codexExec(t, codex, codexConfig(g.base, "local-coder"), t.TempDir(), "List the directory until it works.", aliceKey)
	// Codex retries a 429 whatever x-should-retry says, then names only
	// the status.
	if err == nil || !strings.Contains(err.Error(), "429") {
		t.Fatalf("Codex did not stop on the breaker's refusal: %v", err)
	}
	if line := firstPost(t, hook); !strings.Contains(line, "codex") || !strings.Contains(line, "call with the same result 5 times") {
		t.Fatalf("chat line %q", line)
	}
	if posts := hook.Posts(); len(posts) != 1 {
		t.Fatalf("chat lines %q, want one", posts)
	}
	checkLoopTurns(t, script, 4)
}

// checkLoopTurns checks how many requests carrying a tool result reached
// the backend.
func checkLoopTurns(t *testing.T, script *scriptedBackend, want int) {
	t.Helper()
	n := 0
	for _, c := range script.requests() {
		if _, _, ok := c.req.toolResult(); ok {
			n++
		}
	}
	if n != want {
		t.Errorf("%d requests with a tool result reached the backend, want %d", n, want)
	}
}

// firstPost waits for the chat's first line.
func firstPost(t *testing.T, hook *chatSink) string {
	t.Helper()
	var posts []string
	if !testwait.Until(func() bool { posts = hook.Posts(); return len(posts) > 0 }) {
		t.Fatal("no chat line for the trip")
	}
	return posts[0]
}

// TestBreakerDashboardResume: a session the breaker paused stays paused
// across a config reload; the dashboard's sessions view lists it, with
// its pattern, and its Resume button frees it; the trips table shows the
// week's trip.
func TestBreakerDashboardResume(t *testing.T) {
	ctx, problems := browser(t)
	g, _ := breakerGateway(t, &scriptedBackend{}, "{\n\t\t\t\trepeat 2\n\t\t\t\taction pause\n\t\t\t}", "", nil)
	msgs := `{"role":"user","content":"build it"}`
	for i := range 2 {
		msgs += fmt.Sprintf(`,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_%d","name":"Bash","input":{"command":"make"}}]}`+
			`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_%d","content":"Exit code 2","is_error":true}]}`, i, i)
		g.do(t, "POST", "/v1/messages", aliceKey, `{"model":"claude-sonnet-4-5","max_tokens":64,"messages":[`+msgs+`]}`,
			"anthropic-version", "2023-06-01", "X-Claude-Code-Session-Id", "dash-loop")
	}
	state := func() string {
		_, _, body := g.do(t, "GET", "/v1/organizations/sessions", adminKey, "")
		var page struct {
			Data []struct {
				ID      string
				Breaker *struct{ State string }
			}
		}
		_ = json.Unmarshal(body, &page)
		for _, s := range page.Data {
			if s.ID == "dash-loop" && s.Breaker != nil {
				return s.Breaker.State
			}
		}
		return ""
	}
	// The session is listed once the ledger has its records, the trip
	// once its row is written.
	tripped := func() bool {
		_, _, body := g.do(t, "GET", "/v1/organizations/breaker_report", adminKey, "")
		return strings.Contains(string(body), `"session_id":"dash-loop"`)
	}
	if !testwait.Until(func() bool { return state() == "paused" && tripped() }) {
		t.Fatalf("the session is not listed as paused (%q) or its trip not reported", state())
	}
	// A config reload keeps the pause.
	g.reload(t)
	if got := state(); got != "paused" {
		t.Fatalf("after a reload the session is %q", got)
	}
	var held, trips string
	err := chromedp.Run(ctx,
		chromedp.Navigate(g.base+"/ui/"),
		chromedp.WaitVisible("#key", chromedp.ByID),
		chromedp.SendKeys("#key", adminKey+kb.Enter, chromedp.ByID),
		chromedp.WaitVisible("#total-spend", chromedp.ByID),
		chromedp.Navigate(g.base+"/ui/#sessions"),
		chromedp.WaitVisible(`//button[text()="Resume"]`, chromedp.BySearch),
		chromedp.Text("#view", &held, chromedp.ByID),
		chromedp.Click(`//button[text()="Resume"]`, chromedp.BySearch),
		chromedp.WaitVisible(`//p[contains(., "No session is paused or stopped.")]`, chromedp.BySearch),
		chromedp.Text("#view", &trips, chromedp.ByID),
	)
	if err != nil {
		t.Fatalf("dashboard: %v; view: %s", err, held)
	}
	for _, want := range []string{"Held by the loop breaker", "dash-loop", "paused", "repeat"} {
		if !strings.Contains(held, want) {
			t.Errorf("the sessions view lacks %q: %s", want, held)
		}
	}
	if !strings.Contains(trips, "Loop breaker trips by person and week") || !strings.Contains(trips, "repeat 1") {
		t.Errorf("the trips table: %s", trips)
	}
	if got := state(); got != "watching" {
		t.Fatalf("after Resume the session is %q", got)
	}
	if p := problems(); len(p) > 0 {
		t.Errorf("browser problems: %q", p)
	}
}
