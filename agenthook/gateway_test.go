package agenthook_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// gatewayKey is the one client key the test gateway accepts.
const gatewayKey = "sk-agenthook-e2e-0123456789"

// echoGateway is a real Modelgate gateway (`caddy gateway`) whose every
// model, Claude Code's own names included, is the built-in echo/ backend.
type echoGateway struct {
	base   string
	ledger string
	cmd    *exec.Cmd
	log    *lockedBuffer
	done   chan struct{} // closed when the process has exited
	once   sync.Once
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startEchoGateway runs bin's gateway subcommand on loopback with its data,
// config and ledger in a temp dir, and waits until it is ready.
func startEchoGateway(t *testing.T, bin string) *echoGateway {
	t.Helper()
	dir := t.TempDir()
	models := "model_list:\n  - model_name: echo\n    proxy_params:\n      model: echo/echo\nmodel_aliases:\n  \"claude-*\": echo\n"
	modelsPath := filepath.Join(dir, "models.yaml")
	if err := os.WriteFile(modelsPath, []byte(models), 0o600); err != nil {
		t.Fatal(err)
	}
	// The gateway serves a socket this test holds (fd 3 in the child), so
	// its port is never free for another test to take between being
	// chosen and being served, as it would be after listening on :0 and
	// closing.
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	sock, err := l.File()
	if err != nil {
		t.Fatal(err)
	}

	g := &echoGateway{base: "http://" + l.Addr().String(), ledger: filepath.Join(dir, "ledger.db"), log: &lockedBuffer{}}
	g.cmd = exec.Command(bin, "gateway", "--config", modelsPath, "--listen", "fd/3",
		"--key-env", "MODELGATE_E2E_KEY", "--ledger", "sqlite:"+g.ledger)
	g.cmd.Env = append(os.Environ(), "MODELGATE_E2E_KEY="+gatewayKey, "HOME="+dir,
		"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	g.cmd.Stdout, g.cmd.Stderr = g.log, g.log
	g.cmd.ExtraFiles = []*os.File{sock}
	err = g.cmd.Start()
	sock.Close() // the gateway has its own copy
	if err != nil {
		t.Fatal(err)
	}
	g.done = make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(g.done) }()
	t.Cleanup(func() { g.stop(t) })

	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-g.done:
			t.Fatalf("gateway exited; its log:\n%s", g.log.String())
		default:
		}
		if resp, err := client.Get(g.base + "/health/readiness"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not ready after 30s; its log:\n%s", g.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return g
}

// records stops the gateway, which flushes its ledger queue, and returns
// what the ledger holds.
func (g *echoGateway) records(t *testing.T) []ledger.Record {
	t.Helper()
	g.stop(t)
	store, err := ledger.OpenSQLite(g.ledger)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	recs, err := store.Query(context.Background(), ledger.Filter{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// stop asks the gateway to shut down gracefully and waits for it.
func (g *echoGateway) stop(t *testing.T) {
	g.once.Do(func() {
		_ = g.cmd.Process.Signal(os.Interrupt)
		select {
		case <-g.done:
		case <-time.After(20 * time.Second):
			_ = g.cmd.Process.Kill()
			<-g.done
			t.Errorf("gateway did not stop within 20s; its log:\n%s", g.log.String())
		}
	})
}
