package integration

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// peakRSS is the process's resident set at its highest so far (VmHWM), in
// bytes: the kernel's own record, so no sampling can miss the peak.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status to read the peak RSS from: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc status")
	return 0
}

// TestConcurrentGzipBombsBoundedMemory is the hostile review's defect 8
// against the built binary: 20 concurrent 39 KB gzip bombs, each 40 MB
// of '0' inside a JSON string. Each gets a 413, or a 503 with Retry-After
// when the gateway's body memory (256 MiB by default) had no room, and
// the gateway's peak RSS grows by a few hundred MB at most; the old code
// grew it by about 1.2 GB.
func TestConcurrentGzipBombsBoundedMemory(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML()})
	var zb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&zb, gzip.BestCompression)
	zw.Write([]byte(`{"model":"echo","messages":[{"role":"user","content":"`))
	zeros := bytes.Repeat([]byte("0"), 1<<20)
	for range 40 {
		zw.Write(zeros)
	}
	zw.Write([]byte(`"}]}`))
	zw.Close()
	bomb := zb.Bytes()
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); st != 200 {
		t.Fatalf("warm-up: %d %s", st, body)
	}
	before := peakRSS(t, g.cmd.Process.Pid)
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for range 20 {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", g.base+"/v1/chat/completions", bytes.NewReader(bomb))
			req.Header.Set("Authorization", "Bearer "+aliceKey)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Content-Encoding", "gzip")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode == 503 && resp.Header.Get("Retry-After") == "" {
				t.Error("503 without Retry-After")
			}
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	after := peakRSS(t, g.cmd.Process.Pid)
	if codes[413]+codes[503] != 20 || codes[413] == 0 {
		t.Fatalf("statuses %v, want 413s (and 503s only when memory was full)", codes)
	}
	grew := after - before
	t.Logf("peak RSS %d MiB → %d MiB (+%d MiB); statuses %v", before>>20, after>>20, grew>>20, codes)
	if grew > 640<<20 {
		t.Fatalf("20 bombs grew the gateway's peak RSS by %d MiB, want at most 640 MiB (2.5 × the 256 MiB body memory)", grew>>20)
	}
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); st != 200 {
		t.Fatalf("after the bombs: %d %s", st, body)
	}
}
