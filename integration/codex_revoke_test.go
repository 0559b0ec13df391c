package integration

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/testbin"
)

// TestCodexWebSocketKeyArchivedMidSession: real Codex on the Responses
// WebSocket with a runtime key that an admin archives while Codex's first
// turn is at the backend. The gateway closes the connection (1008) and
// cancels the turn; no later turn reaches the backend (hostile review N1:
// an open Codex connection kept spending after its key was revoked), the
// tool never runs, and Codex ends with the refusal.
func TestCodexWebSocketKeyArchivedMidSession(t *testing.T) {
	codex := testbin.Codex(t)
	script := &scriptedBackend{}
	var once sync.Once
	var g *gateway
	var key createdKey
	archived := make(chan int, 1)
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The turn is read whole, and so counted, before the key is
		// archived: archiving makes the gateway cancel its upstream
		// request, which could otherwise cut the body short and leave the
		// turn in progress uncounted.
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("reading the turn in progress: %v", err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		once.Do(func() {
			req, _ := http.NewRequest("POST", g.base+"/v1/organizations/api_keys/"+key.ID, strings.NewReader(`{"status":"archived"}`))
			req.Header.Set("Authorization", "Bearer "+adminKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				archived <- 0
				return
			}
			resp.Body.Close()
			archived <- resp.StatusCode
		})
		script.ServeHTTP(w, r)
	}))
	t.Cleanup(backend.Close)
	g = startGateway(t, gatewayConfig{models: fmt.Sprintf(`model_list:
  - model_name: coder
    proxy_params:
      model: openai/scripted-coder
      api_base: %s/v1
      api_key: %s
`, backend.URL, upstreamKey)})
	key = createKey(t, g, `{"name":"codex-session"}`)

	dir := t.TempDir()
	config := codexConfig(g.base, "coder") + "supports_websockets = true\nstream_max_retries = 1\nrequest_max_retries = 1\n"
	_, err := codexExec(t, codex, config, dir, "Write the marker file, then say done.", key.Value)
	if st := <-archived; st != http.StatusOK {
		t.Fatalf("archiving the key answered %d", st)
	}
	if err == nil {
		t.Error("Codex finished its task with an archived key")
	} else if !strings.Contains(err.Error(), "archived") {
		t.Errorf("Codex's error does not say the key is archived: %v", err)
	}
	if n := len(script.requests()); n != 1 {
		t.Errorf("the backend saw %d requests, want only the turn in progress when the key was archived", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "marker.txt")); err == nil {
		t.Error("Codex's tool ran on an answer served after the key was archived")
	}
}
