package handlers

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestBatchesTakeAtMostHalfTheBodyMemory: batch bytes (a slowly
// trickled upload holds its share for as long as it likes) stop at half
// of max_body_memory, so every other request still finds the other half
// (a hostile review found one 60 MB upload starving every chat request).
// The default bound stays 8 × max_request_body with batches on: raising
// it for batch inputs let a flood of ordinary bodies hold as much.
func TestBatchesTakeAtMostHalfTheBodyMemory(t *testing.T) {
	st := sqliteLedger(t)
	g, _ := testGateway(t, "model_list:\n  - model_name: local\n    proxy_params:\n      model: echo/e\n", func(o *GatewayOptions) {
		o.Responses = func() ledger.ResponseStore { return st.(ledger.ResponseStore) }
	})
	if want := 8 * g.opts.MaxRequestBody; g.bodyMem.max != want {
		t.Fatalf("default max_body_memory %d with batches on; want %d (8 × max_request_body)", g.bodyMem.max, want)
	}
	m := &batchMemory{g: g}
	ctx := context.Background()
	if !m.Acquire(ctx, m.Max()) {
		t.Fatal("batches could not take their half")
	}
	if m.Acquire(ctx, 1) {
		t.Fatal("batches took more than half the body memory")
	}
	if !g.bodyMem.acquire(ctx, g.bodyMem.max-m.Max(), time.Now().Add(time.Second)) {
		t.Fatal("with batches holding their half, a request found no room in the other")
	}
	g.bodyMem.release(g.bodyMem.max - m.Max())
	m.Release(m.Max())
	if used, _, _ := g.bodyMem.stats(); used != 0 || m.held != 0 {
		t.Fatalf("held after release: gateway %d, batches %d", used, m.held)
	}
}

// sqliteLedger is a ledger in a file of the test's own, closed after it.
func sqliteLedger(t *testing.T) ledger.Store {
	t.Helper()
	st, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}
