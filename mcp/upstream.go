package mcp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
)

// errDown is returned for calls to a server that has no live session, at
// once rather than after a connect attempt, so a dead server costs its
// callers nothing and the others nothing at all.
var errDown = errors.New("is unavailable")

// upstream is one configured server and its current session.
type upstream struct {
	cfg *modellist.MCPServer
	g   *Gateway

	mu    sync.Mutex
	sess  *sdk.ClientSession
	tools []*sdk.Tool // after allowed_tools/disallowed_tools
	down  error
	// known are the names of every tool the server has listed since the
	// gateway started (allowed_tools' exclusions too), so a refused call
	// for one, or one while the server is down, is recorded under its
	// name, and any other name under unknownTool.
	known map[string]bool
	// first is closed when the first connection attempt has finished.
	first     chan struct{}
	firstOnce sync.Once
	// refresh wakes the loop to re-list tools after list_changed.
	refresh chan struct{}
	// listed: an auth: oauth server has listed its tools to someone's
	// session (personal.go); until then it shows its connect tool.
	listed bool
}

// headerTransport adds the server's configured headers to each request.
// They are the upstream's credentials: set here only, never logged.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range t.headers {
		r.Header.Set(k, v)
	}
	return t.base.RoundTrip(r)
}

func (u *upstream) transport(ctx context.Context) sdk.Transport {
	return u.transportOver(ctx, headerTransport{u.cfg.Headers, http.DefaultTransport})
}

// transportOver is the server's transport over base, which adds the
// credentials: the entry's headers, or a person's token (personal.go).
func (u *upstream) transportOver(ctx context.Context, base http.RoundTripper) sdk.Transport {
	// answerGuard turns a call's bad answer into that call's error; the
	// SDK's own event bound is set above it, so the SDK never meets an
	// event it would end the session for.
	// sameOrigin keeps the credentials base adds on the url's origin.
	origin := originGuard(u.cfg.Name, u.cfg.URL, base)
	guard := answerGuard{base: origin, max: maxAnswer}
	switch u.cfg.Transport {
	case modellist.MCPTransportSSE:
		return &sdk.SSEClientTransport{Endpoint: u.cfg.URL, HTTPClient: &http.Client{Transport: guard, CheckRedirect: origin.checkRedirect}, MaxEventSize: 2 * maxAnswer}
	case modellist.MCPTransportStdio:
		cmd := exec.CommandContext(ctx, u.cfg.Command, u.cfg.Args...)
		cmd.Env = os.Environ()
		for k, v := range u.cfg.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		pr, pw := io.Pipe()
		cmd.Stderr = pw
		go func() {
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 0, 4096), 64<<10)
			for sc.Scan() {
				u.g.obs.Stderr(u.cfg.Name, sc.Text())
			}
			_, _ = io.Copy(io.Discard, pr)
		}()
		context.AfterFunc(ctx, func() { _ = pw.Close() })
		return &sdk.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	default:
		guard.posts = true
		guard.streams = newCallStreams(func(why string) { u.g.obs.Ignored(u.cfg.Name, why) })
		return &sdk.StreamableClientTransport{Endpoint: u.cfg.URL, HTTPClient: &http.Client{Transport: guard, CheckRedirect: origin.checkRedirect}, MaxRetries: 1, MaxEventSize: 2 * maxAnswer}
	}
}

// run keeps a session to the server until ctx ends, reconnecting with
// backoff (1 s doubling to 30 s) whenever the session ends or a connect
// fails. A stdio server is thereby restarted when its process exits.
func (u *upstream) run(ctx context.Context) {
	if u.personal() {
		u.g.runPersonal(ctx, u)
		return
	}
	backoff := time.Second
	for ctx.Err() == nil {
		start := time.Now()
		err := u.session(ctx)
		if ctx.Err() != nil {
			return
		}
		u.setDown(err)
		u.attempted()
		u.g.obs.Upstream(u.cfg.Name, err)
		if time.Since(start) > time.Minute {
			backoff = time.Second
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func (u *upstream) setDown(err error) {
	u.mu.Lock()
	u.sess, u.tools, u.down = nil, nil, err
	u.mu.Unlock()
	u.g.changed()
}

// session connects, lists the tools, and waits until the session ends.
func (u *upstream) session(ctx context.Context) error {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "modelgate", Version: "1"}, &sdk.ClientOptions{
		ProgressNotificationHandler: u.g.onProgress,
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case u.refresh <- struct{}{}:
			default:
			}
		},
		// Resources and prompts are listed through to the server on each
		// request, so their changes only need telling.
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { u.g.listChanged(u.cfg.Name, false) },
		PromptListChangedHandler:   func(context.Context, *sdk.PromptListChangedRequest) { u.g.listChanged(u.cfg.Name, true) },
	})
	// Connecting is bounded by connectTimeout, but its context must live
	// as long as the session: the legacy SSE transport ties its GET stream,
	// which carries every answer, to it.
	cctx, ccancel := context.WithCancel(sctx)
	defer ccancel()
	timer := time.AfterFunc(u.g.connectTimeout, ccancel)
	cs, err := client.Connect(cctx, u.transport(sctx), nil)
	inTime := timer.Stop()
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer cs.Close()
	if !inTime {
		return fmt.Errorf("connect: not done within %s", u.g.connectTimeout)
	}
	if err := u.list(sctx, cs); err != nil {
		return err
	}
	u.attempted()
	u.g.obs.Upstream(u.cfg.Name, nil)
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-done:
			if err == nil {
				err = errors.New("session closed")
			}
			return err
		case <-u.refresh:
			if err := u.list(sctx, cs); err != nil {
				return err
			}
		}
	}
}

// list fetches every page of the server's tools and publishes them.
func (u *upstream) list(ctx context.Context, cs *sdk.ClientSession) error {
	lctx, cancel := context.WithTimeout(ctx, u.g.connectTimeout)
	defer cancel()
	var tools []*sdk.Tool
	// listed is every name the server offers, those allowed_tools leaves
	// out too: a call to one is refused under its real name, which the
	// server (not the client) chose.
	var listed []string
	if caps := cs.InitializeResult().Capabilities; caps != nil && caps.Tools != nil {
		for t, err := range cs.Tools(lctx, nil) {
			if err != nil {
				return fmt.Errorf("tools/list: %w", err)
			}
			listed = append(listed, t.Name)
			if !u.cfg.ToolAllowed(t.Name) || !validSchema(t.InputSchema) {
				continue
			}
			tools = append(tools, t)
		}
	}
	u.mu.Lock()
	u.tools, u.down = tools, nil
	if !u.personal() {
		u.sess = cs
	} else {
		u.listed = true
	}
	if u.known == nil {
		u.known = map[string]bool{}
	}
	for _, name := range listed {
		u.known[name] = true
	}
	u.mu.Unlock()
	u.g.changed()
	return nil
}

// validSchema reports whether the SDK's server will take s as a tool's
// input schema (a JSON object schema); a tool without one is left out
// rather than crashing the listing.
func validSchema(s any) bool {
	m, ok := s.(map[string]any)
	return ok && m["type"] == "object"
}

// knows reports whether the server has served tool since the gateway
// started.
func (u *upstream) knows(tool string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.known[tool]
}

// current returns the live session and tools, or why there is none.
func (u *upstream) current() (*sdk.ClientSession, []*sdk.Tool, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.personal() {
		// No shared session: each caller has their own (personal.go).
		return nil, u.personalTools(), nil
	}
	if u.sess == nil {
		return nil, nil, errDown
	}
	return u.sess, u.tools, nil
}
