package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// heldServer is upstreamServer whose initialize answers only once release
// is closed, or never when release is nil: a server still connecting.
func heldServer(t *testing.T, release <-chan struct{}) *httptest.Server {
	up := upstreamServer(t, "tok")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Method == "initialize" {
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.Header.Set("Authorization", "Bearer tok")
		up.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestToolsListWaitsForFirstAttempt: a tools/list right after start waits
// for a server still making its first connection attempt and lists its
// tools, and waits no longer than the start window for one that never
// answers; readiness names the one not connected. After the window nobody
// waits.
func TestToolsListWaitsForFirstAttempt(t *testing.T) {
	release := make(chan struct{})
	var freed sync.Once
	free := func() { freed.Do(func() { close(release) }) }
	late, never := heldServer(t, release), heldServer(t, nil)
	t.Cleanup(free)
	g := New(Options{Servers: []*modellist.MCPServer{
		{Name: "late", Transport: modellist.MCPTransportHTTP, URL: late.URL},
		{Name: "never", Transport: modellist.MCPTransportHTTP, URL: never.URL},
	}})
	g.firstWait = 2 * time.Second
	var waits atomic.Int32
	// The late server connects only once a request is waiting for it, so
	// its tools are listed only if tools/list waited.
	g.onWait = func() {
		waits.Add(1)
		free()
	}
	g.Start()
	t.Cleanup(g.Close)
	gw := httptest.NewServer(withID(g, map[string]*policy.Identity{"all": {KeyID: "k"}}))
	t.Cleanup(gw.Close)
	cs := connect(t, gw.URL+"/mcp", "all")

	start := time.Now()
	res, err := cs.ListTools(context.Background(), nil)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	if !slices.Equal(names, []string{"late-echo", "late-secret"}) {
		t.Fatalf("tools/list right after start: %v", names)
	}
	if took > g.firstWait+time.Second {
		t.Fatalf("tools/list waited %s for a server that never answers; the bound is %s", took, g.firstWait)
	}
	if got := g.NotConnected(); !slices.Equal(got, []string{"never"}) {
		t.Fatalf("not connected: %v", got)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil || waits.Load() != 1 {
		t.Fatalf("after the start window: %v, %d waits", err, waits.Load())
	}
}
