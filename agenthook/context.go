package agenthook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"time"

	"github.com/modelgate/modelgate/workctx"
)

// The events that carry work context: a session starting (Claude Code,
// Codex, Gemini CLI) and a prompt submitted (Claude Code's and Codex's
// UserPromptSubmit, Gemini CLI's BeforeAgent), each a moment the branch
// may have changed since the last.
const (
	EventSessionStart     = "SessionStart"
	EventUserPromptSubmit = "UserPromptSubmit"
	EventBeforeAgent      = "BeforeAgent"
)

// IsContextEvent reports the events whose hook posts the work context.
func IsContextEvent(name string) bool {
	return name == EventSessionStart || name == EventUserPromptSubmit || name == EventBeforeAgent
}

// gatewayEnv are the variables naming the gateway and the person's key, in
// the order tried: the gateway's own, then each agent's (the hook inherits
// the agent's environment, so the key the agent uses is the one that
// reports its context).
var gatewayEnv = [...]struct{ base, key, key2 string }{
	{"MODELGATE_URL", "MODELGATE_API_KEY", ""},
	{"ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_API_KEY"},
	{"OPENAI_BASE_URL", "OPENAI_API_KEY", ""},
	{"GOOGLE_GEMINI_BASE_URL", "GEMINI_API_KEY", ""},
}

// gateway finds the gateway's base URL and the key to post with.
func gateway(getenv func(string) string) (base, key string, ok bool) {
	for _, e := range gatewayEnv {
		base = strings.TrimRight(strings.TrimSpace(getenv(e.base)), "/")
		key = strings.TrimSpace(getenv(e.key))
		if key == "" && e.key2 != "" {
			key = strings.TrimSpace(getenv(e.key2))
		}
		if base != "" && key != "" {
			// OpenAI clients name the API root; the gateway's paths start
			// at the host.
			return strings.TrimSuffix(base, "/v1"), key, true
		}
	}
	return "", "", false
}

// Git runs git in dir and returns its trimmed output.
type Git func(ctx context.Context, dir string, args ...string) (string, error)

func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(cmd.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// WorkContext reads the session's repository, branch and head in dir. The
// remote URL is normalised here, so its credentials never leave the
// machine.
func WorkContext(ctx context.Context, git Git, session, dir string) (workctx.Context, error) {
	if dir == "" {
		return workctx.Context{}, errors.New("the event names no working directory")
	}
	remote, err := git(ctx, dir, "config", "--get", "remote.origin.url")
	if err != nil || remote == "" {
		// No origin: the first remote there is.
		names, _ := git(ctx, dir, "remote")
		if first, _, _ := strings.Cut(names, "\n"); first != "" {
			remote, _ = git(ctx, dir, "config", "--get", "remote."+first+".url")
		}
	}
	c := workctx.Context{SessionID: session, Repository: remote}
	c.Branch, _ = git(ctx, dir, "symbolic-ref", "--short", "-q", "HEAD")
	c.Head, _ = git(ctx, dir, "rev-parse", "-q", "--verify", "HEAD")
	c = c.Clean()
	if c.Repository == "" {
		return c, errors.New("no git remote in " + dir)
	}
	return c, nil
}

// postContext sends the event's work context to the gateway.
func postContext(ctx context.Context, opts Options, ev Event) error {
	if workctx.CleanSession(ev.SessionID) == "" {
		return errors.New("the event names no session")
	}
	base, key, ok := gateway(opts.Getenv)
	client := opts.Client
	if !ok && opts.Login != nil {
		var err error
		if base, key, client, err = opts.Login(ctx); err != nil || base == "" || key == "" {
			return nil // no gateway to tell, or no login: nothing to say
		}
		base, ok = strings.TrimRight(base, "/"), true
	}
	if !ok {
		return nil // no gateway to tell
	}
	git := opts.Git
	if git == nil {
		git = runGit
	}
	c, err := WorkContext(ctx, git, ev.SessionID, ev.CWD)
	if err != nil {
		return err
	}
	body, _ := json.Marshal(c)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+workctx.Path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("the gateway's URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport}
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("posting the work context: %w", redactURL(err))
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("the gateway answered %d: %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}

// redactURL keeps a transport error's text without its URL, which may
// carry credentials an admin put in the base URL.
func redactURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return ue.Unwrap()
	}
	return err
}

// contextTimeout bounds the git calls and the post together: a prompt
// waits for this hook.
const contextTimeout = 3 * time.Second
