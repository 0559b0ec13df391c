package agenthook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/testbin"
)

// webhook is a local stand-in for a Slack incoming webhook. respond decides
// each answer by attempt number (0 first); requests are recorded as received.
type webhook struct {
	url string

	mu   sync.Mutex
	reqs []webhookRequest
}

type webhookRequest struct {
	Method      string
	ContentType string
	Text        string
	Raw         string
	At          time.Time
}

func newWebhook(t *testing.T, respond func(attempt int, w http.ResponseWriter)) *webhook {
	t.Helper()
	h := &webhook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Text string `json:"text"`
		}
		_ = json.Unmarshal(raw, &body)
		h.mu.Lock()
		n := len(h.reqs)
		h.reqs = append(h.reqs, webhookRequest{
			Method: r.Method, ContentType: r.Header.Get("Content-Type"),
			Text: body.Text, Raw: string(raw), At: time.Now(),
		})
		h.mu.Unlock()
		respond(n, w)
	}))
	t.Cleanup(srv.Close)
	// A secret-looking path, so tests can check it never leaks.
	h.url = srv.URL + "/services/T000/B000/s3cr3tT0ken"
	return h
}

func (h *webhook) requests() []webhookRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]webhookRequest(nil), h.reqs...)
}

// slackOK answers like Slack on success: 200 with the plain text "ok".
func slackOK(_ int, w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/html")
	_, _ = io.WriteString(w, "ok")
}

type hookResult struct {
	stdout, stderr string
	exit           int
	took           time.Duration
}

// runHook runs the built binary's agent-hook with a clean environment: only
// PATH, a temporary HOME, and env.
func runHook(t *testing.T, stdin io.Reader, env []string, args ...string) hookResult {
	t.Helper()
	bin := testbin.Path(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"agent-hook"}, args...)...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, env...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := hookResult{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.exit = ee.ExitCode()
	case err != nil:
		t.Fatalf("running agent-hook: %v", err)
	}
	return res
}

const stopEvent = `{"session_id":"00893aaf-19fa-41d2-8238-13269b9b3ca0","transcript_path":"/home/dev/.claude/projects/x.jsonl",` +
	`"cwd":"/home/dev/shop","permission_mode":"default","hook_event_name":"Stop","stop_hook_active":false,` +
	`"last_assistant_message":"Done. Tests pass.","background_tasks":[],"session_crons":[]}`

const stopText = "✅ Claude Code done — project: `shop` (session: `00893aaf-19fa-41d2-8238-13269b9b3ca0`)"

func TestProcessDelivery(t *testing.T) {
	t.Parallel()
	notification := `{"session_id":"s-9","cwd":"/w/api","hook_event_name":"Notification",` +
		`"message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`

	tests := []struct {
		name      string
		stdin     string
		args      []string
		respond   func(int, http.ResponseWriter)
		wantReqs  int
		wantText  string
		wantErr   []string // substrings of the single stderr line; none means stderr empty
		minGap    time.Duration
		maxTook   time.Duration
		webhookFn func(*webhook) string // URL to put in the env; the server's by default
	}{
		{
			name: "stop success", stdin: stopEvent, respond: slackOK,
			wantReqs: 1, wantText: stopText,
		},
		{
			name: "notification success with custom agent", stdin: notification,
			args: []string{"--agent", "Codex"}, respond: slackOK, wantReqs: 1,
			wantText: "⚠️ Codex needs your attention — project: `api` (session: `s-9`): Claude needs your permission to use Bash",
		},
		{
			name: "4xx plain-text code, no retry", stdin: stopEvent,
			respond: func(_ int, w http.ResponseWriter) {
				w.Header().Set("Content-Type", "text/plain")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, "no_service")
			},
			wantReqs: 1, wantText: stopText, wantErr: []string{"404", "no_service"},
		},
		{
			name: "429 retried after Retry-After", stdin: stopEvent,
			respond: func(n int, w http.ResponseWriter) {
				if n == 0 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
					_, _ = io.WriteString(w, `{"ok":false,"error":"rate_limited"}`)
					return
				}
				slackOK(n, w)
			},
			wantReqs: 2, wantText: stopText, minGap: time.Second,
		},
		{
			name: "429 twice gives up after one retry", stdin: stopEvent,
			respond: func(_ int, w http.ResponseWriter) {
				w.Header().Set("Retry-After", "0")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			wantReqs: 2, wantText: stopText, wantErr: []string{"429"},
		},
		{
			name: "429 with Retry-After beyond the budget is not retried", stdin: stopEvent,
			args: []string{"--timeout", "2s"},
			respond: func(_ int, w http.ResponseWriter) {
				w.Header().Set("Retry-After", "30")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			// Far below the 30 s Retry-After; the slack covers a slow process start.
			wantReqs: 1, wantText: stopText, wantErr: []string{"429", "time budget"}, maxTook: 5 * time.Second,
		},
		{
			name: "500 reported, not retried", stdin: stopEvent,
			respond: func(_ int, w http.ResponseWriter) {
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = io.WriteString(w, "rollup_error")
			},
			wantReqs: 1, wantText: stopText, wantErr: []string{"500", "rollup_error"},
		},
		{
			name: "slow server beyond the timeout", stdin: stopEvent, args: []string{"--timeout", "500ms"},
			respond: func(_ int, w http.ResponseWriter) {
				time.Sleep(5 * time.Second)
				slackOK(0, w)
			},
			// Well below the server's 5 s, so the hook gave up on its own
			// 500 ms timeout; the slack covers a slow process start.
			wantReqs: 1, wantText: stopText, wantErr: []string{"did not answer"}, maxTook: 4 * time.Second,
		},
		{
			name: "closed port", stdin: stopEvent, respond: slackOK,
			webhookFn: func(*webhook) string { return "http://" + closedAddr(t) + "/services/T000/B000/s3cr3tT0ken" },
			wantErr:   []string{"connection refused"},
		},
		{
			name: "empty stdin posts nothing", stdin: "", respond: slackOK,
			wantErr: []string{"no hook event"},
		},
		{
			name: "invalid stdin posts nothing", stdin: "{not json", respond: slackOK,
			wantErr: []string{"no hook event"},
		},
		{
			name: "invalid stdin with --event posts the fallback", stdin: "\x00\xffgarbage", args: []string{"--event", "Stop"},
			respond: slackOK, wantReqs: 1,
			wantText: "✅ Claude Code done — project: `unknown` (session: `unknown`)",
		},
		{
			name: "unhandled event posts nothing", stdin: `{"hook_event_name":"PreToolUse","cwd":"/x"}`, respond: slackOK,
			wantErr: []string{`"PreToolUse"`},
		},
		{
			name: "--webhook-env names another variable", stdin: stopEvent, respond: slackOK,
			args: []string{"--webhook-env", "TEAM_HOOK"}, wantReqs: 1, wantText: stopText,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hook := newWebhook(t, tc.respond)
			target := hook.url
			if tc.webhookFn != nil {
				target = tc.webhookFn(hook)
			}
			envName := "CHAT_WEBHOOK_URL"
			if len(tc.args) == 2 && tc.args[0] == "--webhook-env" {
				envName = tc.args[1]
			}
			res := runHook(t, strings.NewReader(tc.stdin), []string{envName + "=" + target}, tc.args...)

			if res.exit != 0 || res.stdout != "" {
				t.Fatalf("exit %d, stdout %q; want 0 and nothing", res.exit, res.stdout)
			}
			if len(tc.wantErr) == 0 && res.stderr != "" {
				t.Errorf("stderr %q, want empty", res.stderr)
			}
			if len(tc.wantErr) > 0 {
				if n := strings.Count(res.stderr, "\n"); n != 1 || !strings.HasSuffix(res.stderr, "\n") {
					t.Errorf("stderr %q: want exactly one line", res.stderr)
				}
				for _, s := range tc.wantErr {
					if !strings.Contains(res.stderr, s) {
						t.Errorf("stderr %q lacks %q", res.stderr, s)
					}
				}
			}
			if strings.Contains(res.stderr, "s3cr3tT0ken") || strings.Contains(res.stderr, "/services/") {
				t.Errorf("stderr leaks the webhook URL: %q", res.stderr)
			}
			if tc.maxTook > 0 && res.took > tc.maxTook {
				t.Errorf("took %v, want at most %v", res.took, tc.maxTook)
			}

			reqs := hook.requests()
			if len(reqs) != tc.wantReqs {
				t.Fatalf("webhook got %d requests, want %d: %+v", len(reqs), tc.wantReqs, reqs)
			}
			for _, r := range reqs {
				mt, _, _ := mime.ParseMediaType(r.ContentType)
				if r.Method != http.MethodPost || mt != "application/json" {
					t.Errorf("request %s with Content-Type %q, want POST application/json", r.Method, r.ContentType)
				}
				if r.Text != tc.wantText {
					t.Errorf("text %q, want %q", r.Text, tc.wantText)
				}
				var keys map[string]any
				if err := json.Unmarshal([]byte(r.Raw), &keys); err != nil || len(keys) != 1 {
					t.Errorf("body %s: want a JSON object with only \"text\"", r.Raw)
				}
			}
			if tc.minGap > 0 && len(reqs) == 2 {
				if gap := reqs[1].At.Sub(reqs[0].At); gap < tc.minGap {
					t.Errorf("retry after %v, want at least %v (Retry-After)", gap, tc.minGap)
				}
			}
		})
	}
}

// TestProcessNoWebhook checks that without a URL nothing is posted and the
// hook is silent, whatever stdin holds.
func TestProcessNoWebhook(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t, slackOK)
	for _, tc := range []struct {
		name  string
		env   []string
		stdin string
	}{
		{"unset", nil, stopEvent},
		{"empty", []string{"CHAT_WEBHOOK_URL="}, stopEvent},
		{"blank", []string{"CHAT_WEBHOOK_URL=   "}, stopEvent},
		{"other variable set", []string{"CHAT_WEBHOOK_URL=" + hook.url}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{}
			if tc.name == "other variable set" {
				args = []string{"--webhook-env", "UNSET_HOOK_VAR"}
			}
			res := runHook(t, strings.NewReader(tc.stdin), tc.env, args...)
			if res.exit != 0 || res.stdout != "" || res.stderr != "" {
				t.Errorf("exit %d stdout %q stderr %q; want 0 and silence", res.exit, res.stdout, res.stderr)
			}
		})
	}
	if n := len(hook.requests()); n != 0 {
		t.Errorf("webhook got %d requests, want none", n)
	}
}

// TestProcessStdinNeverCloses runs the hook with a stdin pipe the parent
// keeps open: the hook must still finish, and deliver what --event forces.
func TestProcessStdinNeverCloses(t *testing.T) {
	t.Parallel()
	hook := newWebhook(t, slackOK)
	// An *os.File is handed to the child as is; an io.Pipe would make
	// exec wait for a copy that never ends.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pr.Close(); pw.Close() })
	res := runHook(t, pr, []string{"CHAT_WEBHOOK_URL=" + hook.url}, "--event", "Notification")
	if res.exit != 0 || res.stdout != "" || res.stderr != "" {
		t.Fatalf("exit %d stdout %q stderr %q", res.exit, res.stdout, res.stderr)
	}
	if res.took > 10*time.Second {
		t.Errorf("took %v with an open stdin", res.took)
	}
	reqs := hook.requests()
	want := "⚠️ Claude Code needs your attention — project: `unknown` (session: `unknown`)"
	if len(reqs) != 1 || reqs[0].Text != want {
		t.Errorf("requests %+v, want one with %q", reqs, want)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestProcessNeverFollowsRedirects: a 307 used to re-post the message to
// another host and a 302 to drop it silently (as a GET). Now neither is
// followed, and the redirect is the one stderr line.
func TestProcessNeverFollowsRedirects(t *testing.T) {
	t.Parallel()
	for _, status := range []int{http.StatusTemporaryRedirect, http.StatusFound, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			elsewhere := newWebhook(t, slackOK)
			hook := newWebhook(t, func(_ int, w http.ResponseWriter) {
				w.Header().Set("Location", elsewhere.url)
				w.WriteHeader(status)
			})
			res := runHook(t, strings.NewReader(stopEvent), []string{"CHAT_WEBHOOK_URL=" + hook.url})
			if res.exit != 0 || res.stdout != "" {
				t.Fatalf("exit %d, stdout %q", res.exit, res.stdout)
			}
			if n := len(elsewhere.requests()); n != 0 {
				t.Fatalf("the redirect target received %d requests", n)
			}
			if n := len(hook.requests()); n != 1 {
				t.Fatalf("the webhook received %d requests, want 1", n)
			}
			if !strings.Contains(res.stderr, strconv.Itoa(status)) || !strings.Contains(res.stderr, "redirect not followed") ||
				strings.Count(res.stderr, "\n") != 1 || strings.Contains(res.stderr, "/services/") {
				t.Fatalf("stderr %q, want one line naming the redirect and no URL", res.stderr)
			}
		})
	}
}
