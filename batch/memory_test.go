package batch

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
)

// boundedMemory is a body memory of max bytes that never waits.
type boundedMemory struct {
	mu              sync.Mutex
	max, used, peak int64
}

func (m *boundedMemory) Acquire(_ context.Context, n int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.used+n > m.max {
		return false
	}
	m.used += n
	m.peak = max(m.peak, m.used)
	return true
}

func (m *boundedMemory) Release(n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.used -= n
}

func (m *boundedMemory) Max() int64 { return m.max }

func (m *boundedMemory) state() (used, peak int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.used, m.peak
}

// TestBatchInputWithinBodyMemory: with an 8 MiB body memory, a batch
// input whose working set passes it (a 3 MiB Message Batch, a 3 MiB
// upload, a batch created from a 3 MiB file another instance took) is
// refused with 413 in the caller's shape, naming max_body_memory; one that
// finds the memory held by others gets 503 body_memory_full with
// Retry-After; a small one is served; and what each held is given back.
func TestBatchInputWithinBodyMemory(t *testing.T) {
	st := sqliteStore(t)
	mem := &boundedMemory{max: 8 << 20}
	srv := instance(t, st, newRunner(), Options{Memory: mem})
	big := messageBatch(1, `{"custom_id":"pad","params":{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"`+strings.Repeat("x", 3<<20)+`"}]}}`)
	status, b := call(t, "POST", srv.URL+"/v1/messages/batches", "", big, "application/json")
	if status != 413 || !strings.Contains(string(b), `"type":"error"`) || !strings.Contains(string(b), "max_body_memory") {
		t.Fatalf("an Anthropic batch past the body memory: %d %.300s", status, b)
	}
	status, b = upload(t, srv.URL, bytes.Repeat(openAIInput(1), (3<<20)/len(openAIInput(1))), "batch")
	if status != 413 || !strings.Contains(string(b), `"error"`) || !strings.Contains(string(b), "max_body_memory") {
		t.Fatalf("an upload past the body memory: %d %.300s", status, b)
	}
	if used, peak := mem.state(); used != 0 || peak > mem.max {
		t.Fatalf("after the refusals the memory holds %d (peak %d of %d)", used, peak, mem.max)
	}

	// Another instance without the bound takes the 3 MiB file; a create
	// from it here is refused before the file is read.
	other := instance(t, st, newRunner(), Options{})
	status, b = upload(t, other.URL, bytes.Repeat(openAIInput(1), (3<<20)/len(openAIInput(1))), "batch")
	if status != 200 {
		t.Fatalf("upload on the unbounded instance: %d %s", status, b)
	}
	create := []byte(`{"input_file_id":"` + field(t, b, "id") + `","endpoint":"/v1/chat/completions","completion_window":"24h"}`)
	if status, b := call(t, "POST", srv.URL+"/v1/batches", "", create, "application/json"); status != 413 || !strings.Contains(string(b), "max_body_memory") {
		t.Fatalf("a batch from a file past the body memory: %d %.300s", status, b)
	}

	// The memory held by other requests: a small upload waits its turn.
	if !mem.Acquire(context.Background(), mem.max-holdStep/2) {
		t.Fatal("could not fill the memory")
	}
	status, b = upload(t, srv.URL, openAIInput(3), "batch")
	if status != 503 || !strings.Contains(string(b), "body_memory_full") {
		t.Fatalf("an upload while the memory is full: %d %s", status, b)
	}
	mem.Release(mem.max - holdStep/2)
	if status, b := call(t, "POST", srv.URL+"/v1/messages/batches", "", messageBatch(2), "application/json"); status != 200 {
		t.Fatalf("a small batch: %d %s", status, b)
	}
	if used, peak := mem.state(); used != 0 || peak > mem.max || peak == 0 {
		t.Fatalf("the memory holds %d after the requests (peak %d of %d)", used, peak, mem.max)
	}
}
