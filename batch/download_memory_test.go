package batch

import (
	"bytes"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/testwait"
)

// TestFileDownloadsCountAgainstBodyMemory: a file's content sent back is
// held (the store's copy and the driver's) and counts against the bound
// as an upload does (a hostile review served 16 MiB through an 8 MiB
// bound with nothing counted): concurrent downloads past it get 503
// body_memory_full, and what each held is given back.
func TestFileDownloadsCountAgainstBodyMemory(t *testing.T) {
	st := sqliteStore(t)
	mem := &boundedMemory{max: 8 << 20}
	srv := instance(t, st, newRunner(), Options{Memory: mem})
	status, b := upload(t, srv.URL, bytes.Repeat(openAIInput(1), (1<<20)/len(openAIInput(1))), "batch")
	if status != 200 {
		t.Fatalf("upload %d %s", status, b)
	}
	id := field(t, b, "id")
	mem.mu.Lock()
	mem.peak = 0
	mem.mu.Unlock()
	var wg sync.WaitGroup
	var mu sync.Mutex
	served, full := 0, 0
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, body := call(t, "GET", srv.URL+"/v1/files/"+id+"/content", "", nil, "")
			mu.Lock()
			defer mu.Unlock()
			switch {
			case s == 200 && len(body) >= 1<<19:
				served++
			case s == 503 && strings.Contains(string(body), "body_memory_full"):
				full++
			default:
				t.Errorf("a download: %d %.200s", s, body)
			}
		}()
	}
	wg.Wait()
	// A handler gives its hold back after its last byte reached the
	// client.
	testwait.Until(func() bool { used, _ := mem.state(); return used == 0 })
	used, peak := mem.state()
	if served == 0 || peak == 0 || peak > mem.max || used != 0 {
		t.Fatalf("16 downloads: %d served, %d refused; peak %d of %d, %d still held", served, full, peak, mem.max, used)
	}
}

// TestFileDownloadIsStreamed: a file larger than a piece is sent whole,
// while the download holds no more than two pieces of the bound.
func TestFileDownloadIsStreamed(t *testing.T) {
	st := sqliteStore(t)
	mem := &boundedMemory{max: 16 << 20}
	srv := instance(t, st, newRunner(), Options{Memory: mem})
	content := bytes.Repeat(openAIInput(1), (3<<20)/len(openAIInput(1)))
	status, b := upload(t, srv.URL, content, "batch")
	if status != 200 {
		t.Fatalf("upload %d %s", status, b)
	}
	mem.mu.Lock()
	mem.peak = 0
	mem.mu.Unlock()
	s, body := call(t, "GET", srv.URL+"/v1/files/"+field(t, b, "id")+"/content", "", nil, "")
	if s != 200 || !bytes.Equal(body, content) {
		t.Fatalf("download %d, %d of %d bytes", s, len(body), len(content))
	}
	if _, peak := mem.state(); peak == 0 || peak > downloadCopies*4*streamChunk {
		t.Fatalf("a %d-byte download held %d bytes of the bound", len(content), peak)
	}
}
