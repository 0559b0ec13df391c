package handlers

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/providers"
)

// TestOversizedStreamEventFailsCleanly: an upstream whose event never ends
// (data lines with no blank line) used to grow the gateway's memory
// without bound; now the stream stops at the event bound with an error
// event in the client's format and an error record.
func TestOversizedStreamEventFailsCleanly(t *testing.T) {
	up := newFakeUpstream(t, "flood", func(w http.ResponseWriter, r *http.Request, n int64) {
		streamStart(w, "part")
		line := []byte("data: " + strings.Repeat("x", 4000) + "\n")
		for sent := 0; sent < providers.MaxEventBytes+(2<<20); sent += len(line) {
			if _, err := w.Write(line); err != nil {
				return // the gateway hung up, as it should
			}
		}
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), nil)
	rec := post(g, alice, "/v1/chat/completions", chatBody("m", true))
	body := rec.Body.String()
	if rec.Code != http.StatusOK || !strings.Contains(body, `"part"`) || !strings.Contains(body, "stream event over 16 MiB") {
		t.Fatalf("%d %.300s, want the content then an error event naming the bound", rec.Code, body)
	}
	if rs := obs.Records(); len(rs) != 1 || rs[0].Outcome != "error" || rs[0].Status != http.StatusBadGateway {
		t.Fatalf("records %+v, want one 502 error", rs)
	}
}

// TestHugeStreamEventBufferNotPooled: a large but legal event grows the
// output buffer; that buffer must not go back to the pool, where it would
// stay pinned for the life of the process.
func TestHugeStreamEventBufferNotPooled(t *testing.T) {
	big := strings.Repeat("y", 4<<20)
	up := newFakeUpstream(t, "big", func(w http.ResponseWriter, r *http.Request, n int64) {
		streamStart(w, big)
		streamChunk(w, "", true)
	})
	g, _ := testGateway(t, "model_list:\n"+entry("m", up.srv.URL), nil)
	rec := post(g, alice, "/v1/chat/completions", chatBody("m", true))
	if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(big)) {
		t.Fatalf("%d: the big event did not arrive", rec.Code)
	}
	for range 4 {
		if p := g.outPool.Get().(*[]byte); cap(*p) > maxPooledBody {
			t.Fatalf("a %d-byte output buffer went back to the pool", cap(*p))
		}
	}
}
