package agenthook

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelgate/modelgate/webhook"
)

// Defaults for Options.
const (
	DefaultWebhookEnv   = "CHAT_WEBHOOK_URL"
	DefaultTimeout      = 5 * time.Second
	DefaultStdinTimeout = time.Second
)

// Options configures one hook run. Zero values take the defaults.
type Options struct {
	Agent      string // name shown in the message; DefaultAgent if empty
	WebhookEnv string // environment variable holding the webhook URL
	Event      string // forces the event kind instead of hook_event_name
	// Timeout bounds the whole delivery, including one retry after a 429.
	Timeout time.Duration
	// StdinTimeout bounds the wait for the event on stdin. Agents write it
	// and close the pipe at once; the bound only matters when someone runs
	// the command with a stdin that never closes.
	StdinTimeout time.Duration

	Stdin  io.Reader
	Stderr io.Writer
	Getenv func(string) string // os.Getenv if nil
	Client *http.Client        // a proxy-aware default client if nil
	Git    Git                 // runs git; the git on PATH if nil
	// Login names the gateway, a key and the client to reach it with when
	// the environment names none (an agent whose key comes from
	// `caddy modelgate login --print-key`, its apiKeyHelper); nil: none.
	Login func(ctx context.Context) (base, key string, client *http.Client, err error)
}

// Run handles one hook invocation. It never fails: the agent must not be
// held up or blocked by chat delivery (on Stop a non-zero exit can keep the
// agent working), so problems become a single line on Stderr and nothing is
// ever written to stdout.
func Run(opts Options) {
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.WebhookEnv == "" {
		opts.WebhookEnv = DefaultWebhookEnv
	}
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.StdinTimeout <= 0 {
		opts.StdinTimeout = DefaultStdinTimeout
	}

	// Stdin is read even when no webhook is configured so the agent's write
	// never meets a closed pipe.
	data := readStdin(opts.Stdin, opts.StdinTimeout)
	if ev, err := ParseEvent(data); err == nil && IsContextEvent(ev.HookEventName) && opts.Event == "" {
		ctx, cancel := context.WithTimeout(context.Background(), contextTimeout)
		defer cancel()
		if err := postContext(ctx, opts, ev); err != nil {
			fmt.Fprintln(opts.Stderr, "agent-hook: "+webhook.Clip(err.Error()))
		}
		return
	}
	webhookURL := strings.TrimSpace(opts.Getenv(opts.WebhookEnv))
	if webhookURL == "" {
		return
	}

	ev, parseErr := ParseEvent(data)
	text, ok := BuildMessage(ev, opts.Agent, opts.Event)
	if !ok {
		switch {
		case parseErr != nil:
			fmt.Fprintln(opts.Stderr, "agent-hook: no hook event JSON on stdin and no --event; nothing posted")
		default:
			fmt.Fprintf(opts.Stderr, "agent-hook: no message for event %q; nothing posted\n", webhook.Clip(ev.HookEventName))
		}
		return
	}

	ctx, cancel := context.WithTimeout(context.Background(), opts.Timeout)
	defer cancel()
	client := opts.Client
	if client == nil {
		client = &http.Client{Transport: http.DefaultTransport}
	}
	if err := webhook.Post(ctx, client, webhookURL, text); err != nil {
		fmt.Fprintln(opts.Stderr, "agent-hook: "+webhook.Redact(err.Error(), webhookURL))
	}
}

// readStdin returns what r yields within limit. A terminal or a pipe that is
// never closed must not hang the hook, so the read runs aside and is
// abandoned at the deadline (the process exits soon after anyway).
func readStdin(r io.Reader, limit time.Duration) []byte {
	if r == nil {
		return nil
	}
	if f, ok := r.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			return nil
		}
	}
	done := make(chan []byte, 1)
	go func() {
		b, _ := readLimited(r)
		done <- b
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case b := <-done:
		return b
	case <-t.C:
		return nil
	}
}
