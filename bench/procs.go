package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// child is a process the harness started and must stop.
type child struct {
	name string
	cmd  *exec.Cmd
	log  *tailBuffer
	done chan struct{}
	// stdin, when set, is the write end of the child's stdin; the child
	// reads it to notice the harness has gone.
	stdin io.Closer
}

// tailBuffer keeps the last bytes a child wrote, for error messages.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 8<<10; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// start runs the command in its own process group, killed by the kernel
// if the harness dies first (Pdeathsig), so nothing outlives a run.
func start(name string, cmd *exec.Cmd) (*child, error) {
	c := &child{name: name, cmd: cmd, log: &tailBuffer{}, done: make(chan struct{})}
	if cmd.Stdout == nil {
		cmd.Stdout = c.log
	}
	cmd.Stderr = c.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); close(c.done) }()
	return c, nil
}

func (c *child) pid() int { return c.cmd.Process.Pid }

// stop asks the process group to end, then kills it after a grace period.
func (c *child) stop() {
	if c.stdin != nil {
		_ = c.stdin.Close()
	}
	pgid := c.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startUpstream re-executes this program in -upstream mode and waits for
// the address it prints. Its stdin is a pipe the harness holds, so the
// upstream also ends when the harness does.
func startUpstream(chunks int, gap time.Duration) (*child, string, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, "", err
	}
	cmd := exec.Command(self, "-upstream", "-listen", "127.0.0.1:0", "-chunks", fmt.Sprint(chunks), "-gap", gap.String())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	c, err := start("upstream", cmd)
	if err != nil {
		return nil, "", err
	}
	c.stdin = stdin
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		c.stop()
		return nil, "", fmt.Errorf("upstream did not start: %v: %s", err, c.log)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening "))
	return c, addr, nil
}

// benchKey is the gateway key the load generator presents.
const benchKey = "sk-bench-0123456789abcdef"

func modelsYAML(up string) string {
	return fmt.Sprintf(`model_list:
  - model_name: oa
    proxy_params:
      model: openai/fake-gpt
      api_base: http://%[1]s/openai/v1
      api_key: bench-upstream-openai
  - model_name: claude
    proxy_params:
      model: anthropic/claude-fake
      api_base: http://%[1]s/anthropic
      api_key: bench-upstream-anthropic
  - model_name: llama
    proxy_params:
      model: ollama/llama-fake
      api_base: http://%[1]s/ollama
  - model_name: ts
    proxy_params:
      model: openai/fake-stamped
      api_base: http://%[1]s/ts/v1
      api_key: bench-upstream-openai
  - model_name: idle
    proxy_params:
      model: openai/fake-idle
      api_base: http://%[1]s/idle/v1
      api_key: bench-upstream-openai
  - model_name: echo
    proxy_params:
      model: echo/echo
  - model_name: slow
    proxy_params:
      model: openai/fake-gpt
      api_base: http://%[1]s/slow/v1
      api_key: bench-upstream-openai
  - model_name: tf
    proxy_params:
      model: openai/fake-stamped
      api_base: http://%[1]s/tf/v1
      api_key: bench-upstream-openai
`, up) + unscannedYAML(up)
}

// unscannedYAML are twins of the instant, 20 ms and short-stream mocks'
// entries with the secret firewall off (a local entry logs by default,
// which scans every request), so its cost shows beside the default's.
func unscannedYAML(up string) string {
	var b strings.Builder
	for _, m := range []struct{ name, model, path string }{
		{"oa-unscanned", "fake-gpt", "openai"},
		{"slow-unscanned", "fake-gpt", "slow"},
		{"tf-unscanned", "fake-stamped", "tf"},
	} {
		fmt.Fprintf(&b, "  - model_name: %s\n    proxy_params:\n      model: openai/%s\n      api_base: http://%s/%s/v1\n      api_key: bench-upstream-openai\n    secrets: {action: \"off\"}\n", m.name, m.model, up, m.path)
	}
	return b.String()
}

// gatewayCaddyfile is a gateway as a team would run it, ledger on, with
// the admin endpoint on loopback so /debug/pprof/ can be profiled.
func gatewayCaddyfile(dir string, port, adminPort int, durability string) string {
	return fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
	modelgate {
		ledger sqlite %s
		durability %s
	}
}

http://127.0.0.1:%d {
	llm_auth {
		key {env.BENCH_KEY} {
			id bench
		}
	}
	llm_gateway {
		models %s
	}
}
`, adminPort, filepath.Join(dir, "ledger.db"), durability, port, filepath.Join(dir, "models.yaml"))
}

// caddyfilePlain is the floor: Caddy's own reverse proxy to the same
// upstream, with as many idle upstream connections kept as the gateway
// keeps (Caddy's default is 32, which would make it redial under load).
func caddyfilePlain(up string, port, adminPort int) string {
	return fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
}

http://127.0.0.1:%d {
	reverse_proxy %s {
		transport http {
			keepalive_idle_conns_per_host 256
		}
	}
}
`, adminPort, port, up)
}

// startCaddy runs `caddy run` on a Caddyfile written to dir and waits
// until the site answers.
func startCaddy(ctx context.Context, name, bin, dir, caddyfile string, probe func() error, env []string) (*child, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cf := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cf, []byte(caddyfile), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "run", "--config", cf, "--adapter", "caddyfile")
	cmd.Env = append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HOME="+dir)
	cmd.Env = append(cmd.Env, env...)
	c, err := start(name, cmd)
	if err != nil {
		return nil, err
	}
	if err := waitReady(ctx, c, probe); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// waitReady polls probe until it succeeds. The probe checks the answer
// is this child's, not another program's that took the port after
// freePort released it (other test suites share the machine), and the
// child must still be running once it passes.
func waitReady(ctx context.Context, c *child, probe func() error) error {
	deadline := time.Now().Add(60 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return fmt.Errorf("%s exited: %s", c.name, c.log)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if last = probe(); last == nil {
			time.Sleep(100 * time.Millisecond)
			select {
			case <-c.done:
				return fmt.Errorf("%s exited: %s", c.name, c.log)
			default:
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready within 60s (%v): %s", c.name, last, c.log)
}

// probeHTTP sends one request and wants status 200 and want in the body.
func probeHTTP(method, url string, h http.Header, body []byte, want string) func() error {
	cl := &http.Client{Timeout: 2 * time.Second}
	return func() error {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		for k, v := range h {
			req.Header[k] = v
		}
		resp, err := cl.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(want)) {
			return fmt.Errorf("%s %s: status %d, body %.200q", method, url, resp.StatusCode, b)
		}
		return nil
	}
}
