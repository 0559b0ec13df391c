// Package integration drives the real caddy binary, started on a
// Caddyfile, with the official OpenAI and Anthropic Go SDKs against
// loopback fakes of every backend kind.
package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testbin"
	"github.com/modelgate/modelgate/ledger"
)

// Keys the test gateway accepts.
const (
	aliceKey = "sk-test-alice-0123456789"
	bobKey   = "sk-test-bob-0123456789"
	adminKey = "sk-test-admin-0123456789"
)

// upstreams are the fakes one gateway talks to.
type upstreams struct {
	openai, anthropic, ollama          *httptest.Server
	openaiRec, anthropicRec, ollamaRec *fakes.Recorder
}

func startUpstreams(t *testing.T, o fakes.Options) *upstreams {
	t.Helper()
	u := &upstreams{openaiRec: &fakes.Recorder{}, anthropicRec: &fakes.Recorder{}, ollamaRec: &fakes.Recorder{}}
	u.openai = httptest.NewServer(fakes.OpenAI(o, u.openaiRec))
	u.anthropic = httptest.NewServer(fakes.Anthropic(o, u.anthropicRec))
	u.ollama = httptest.NewServer(fakes.Ollama(o, u.ollamaRec))
	t.Cleanup(func() {
		u.openai.Close()
		u.anthropic.Close()
		u.ollama.Close()
	})
	return u
}

// modelsYAML maps one alias to each backend kind.
func (u *upstreams) modelsYAML() string {
	return fmt.Sprintf(`model_list:
  - model_name: oa
    proxy_params:
      model: openai/fake-gpt
      api_base: %s/v1
      api_key: upstream-openai-secret
  - model_name: claude
    proxy_params:
      model: anthropic/claude-fake
      api_base: %s
      api_key: upstream-anthropic-secret
  - model_name: llama
    proxy_params:
      model: ollama/llama-fake
      api_base: %s
  - model_name: echo
    proxy_params:
      model: echo/echo
model_aliases:
  "claude-sonnet-*": oa
`, u.openai.URL, u.anthropic.URL, u.ollama.URL)
}

// gateway is a running caddy process.
type gateway struct {
	base    string
	dir     string
	cmd     *exec.Cmd
	stderr  *syncBuffer
	adminAt string
	done    chan struct{} // closed when the process has exited
	// site is the socket caddy serves, closed once the process has
	// stopped so that the port refuses connections as a stopped server's
	// does
	site *net.TCPListener
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gatewayConfig is what a test needs in its Caddyfile.
// gatewayBaseURL in gatewayConfig.globalExtra or ledgerLine becomes the
// site's URL.
const gatewayBaseURL = "GATEWAY_BASE_URL"

type gatewayConfig struct {
	models      string
	globalExtra string // inside the global options block
	siteExtra   string // inside the site block, before the handlers
	authExtra   string // inside the llm_auth block, after the keys (e.g. an oidc block)
	ledgerPath  string // default: a file in the test's temp dir
	ledgerLine  string // replaces `ledger sqlite <path>` in the modelgate block, e.g. a postgres ledger
	env         []string
	dir         string // reuse a directory (restart tests)
	tls         bool   // serve https://localhost with Caddy's internal CA
	moreSites   string // other site blocks, after the gateway's
}

// startGateway writes the Caddyfile and models file and starts caddy run.
// The site is served on a socket the test holds (fd 3: listenLoopback), so
// its port cannot be taken; the admin API listens on a port from freePort,
// and if someone else bound that one first the gateway is started again
// on another.
func startGateway(t *testing.T, c gatewayConfig) *gateway {
	t.Helper()
	dir := c.dir
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.WriteFile(filepath.Join(dir, "models.yaml"), []byte(c.models), 0o600); err != nil {
		t.Fatal(err)
	}
	ledgerPath := c.ledgerPath
	if ledgerPath == "" {
		ledgerPath = filepath.Join(dir, "ledger.db")
	}
	ledgerLine := "ledger sqlite " + ledgerPath
	if c.ledgerLine != "" {
		ledgerLine = c.ledgerLine
	}
	siteLn := listenLoopback(t)
	site := fmt.Sprintf("http://127.0.0.1:%d", portOf(siteLn))
	base := site
	if c.tls {
		site = fmt.Sprintf("https://localhost:%d", portOf(siteLn))
		base = site
		// HTTP/3 would need a UDP socket as well (fdgram); the tests speak
		// HTTP/1.1 and HTTP/2.
		c.globalExtra += "\n\tskip_install_trust\n\tlocal_certs\n\tauto_https disable_redirects\n\tservers {\n\t\tprotocols h1 h2\n\t}"
		c.siteExtra += "\n\ttls internal"
	}
	for attempt := 1; ; attempt++ {
		adminPort := freePort(t)
		// The site's own URL, for options that name it (public_url).
		globalExtra := strings.ReplaceAll(c.globalExtra, gatewayBaseURL, base)
		ledgerLine := strings.ReplaceAll(ledgerLine, gatewayBaseURL, base)
		caddyfile := fmt.Sprintf(`{
	admin 127.0.0.1:%d
	persist_config off
	modelgate {
		%s
	}
	%s
}

%s {
	bind fd/3
	%s
	llm_auth {
		key {env.ALICE_KEY} {
			id alice
			workspace frontend
		}
		key {env.BOB_KEY} {
			id bob
			workspace backend
			models echo llama
		}
		admin_key {env.ADMIN_KEY}
		%s
	}
	llm_admin
	llm_gateway {
		models %s
	}
	respond "not found" 404
}
%s
	`, adminPort, ledgerLine, globalExtra, site, c.siteExtra, c.authExtra, filepath.Join(dir, "models.yaml"), c.moreSites)
		g, err := launchGateway(t, c, dir, base, siteLn, adminPort, caddyfile)
		if err == nil {
			return g
		}
		if !strings.Contains(g.stderr.String(), "address already in use") || attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("admin port %d was taken; starting again on another", adminPort)
	}
}

// launchGateway starts caddy on caddyfile and waits until it is ready; the
// error, with the gateway's log, says why it never was.
func launchGateway(t *testing.T, c gatewayConfig, dir, base string, siteLn *net.TCPListener, adminPort int, caddyfile string) (*gateway, error) {
	t.Helper()
	cfPath := filepath.Join(dir, "Caddyfile")
	if err := os.WriteFile(cfPath, []byte(caddyfile), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &gateway{base: base, dir: dir, stderr: &syncBuffer{}, adminAt: fmt.Sprintf("127.0.0.1:%d", adminPort), site: siteLn}
	g.cmd = exec.Command(testbin.Path(t), "run", "--config", cfPath, "--adapter", "caddyfile")
	g.cmd.Env = append(os.Environ(),
		"ALICE_KEY="+aliceKey, "BOB_KEY="+bobKey, "ADMIN_KEY="+adminKey,
		"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "HOME="+dir)
	g.cmd.Env = append(g.cmd.Env, c.env...)
	g.cmd.Stderr = g.stderr
	g.cmd.Stdout = g.stderr
	siteFile := listenerFile(t, siteLn)
	g.cmd.ExtraFiles = []*os.File{siteFile} // fd 3 in caddy: `bind fd/3`
	err := g.cmd.Start()
	siteFile.Close() // caddy has its own copy
	if err != nil {
		t.Fatal(err)
	}
	g.done = make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(g.done) }()
	t.Cleanup(func() { g.stop(t) })
	// Readiness is polled before the test has the CA root; the TLS test
	// verifies the certificate properly afterwards.
	pollClient := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := pollClient.Get(g.base + "/health/readiness")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g, nil
			}
		}
		if time.Now().After(deadline) {
			return g, fmt.Errorf("gateway did not become ready; its log:\n%s", g.stderr.String())
		}
		select {
		case <-g.done:
			return g, fmt.Errorf("gateway exited; its log:\n%s", g.stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop asks caddy to shut down gracefully (flushing the ledger) and waits.
func (g *gateway) stop(t *testing.T) {
	defer g.site.Close()
	select {
	case <-g.done:
		return
	default:
	}
	_ = g.cmd.Process.Signal(os.Interrupt)
	select {
	case <-g.done:
	case <-time.After(20 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.done
		t.Errorf("gateway did not stop within 20s; log:\n%s", g.stderr.String())
	}
}

// ledgerRecords stops the gateway (which flushes the ledger) and reads
// every record it wrote.
func (g *gateway) ledgerRecords(t *testing.T) []ledger.Record {
	t.Helper()
	g.stop(t)
	s, err := ledger.OpenSQLite(filepath.Join(g.dir, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now()
	recs, err := s.Query(context.Background(), ledger.Filter{From: now.Add(-time.Hour), To: now.Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// do sends a raw request with a key and returns status and body.
func (g *gateway) do(t *testing.T, method, path, key string, body string, headers ...string) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, g.base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header, buf.Bytes()
}
