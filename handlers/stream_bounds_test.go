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

// TestInvalidStreamEventIsAnError: `data: {not json` from an upstream used
// to be relayed as is and the request recorded ok; every client format
// and upstream kind now ends the stream with an error event.
func TestInvalidStreamEventIsAnError(t *testing.T) {
	for _, kind := range []string{"openai/m", "anthropic/m"} {
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			t.Run(kind+path, func(t *testing.T) {
				up := newFakeUpstream(t, "bad", func(w http.ResponseWriter, r *http.Request, n int64) {
					w.Header().Set("Content-Type", "text/event-stream")
					if kind == "anthropic/m" {
						w.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n"))
						w.Write([]byte("event: content_block_delta\ndata: {not json\n\n"))
						return
					}
					streamStart(w, "part")
					w.Write([]byte("data: {not json\n\n"))
				})
				g, obs := testGateway(t, "model_list:\n"+kindEntry("m", kind, up.srv.URL), nil)
				body, hdr := chatBody("m", true), []string(nil)
				if path == "/v1/messages" {
					body = `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
					hdr = []string{"Anthropic-Version", "2023-06-01"}
				}
				rec := post(g, alice, path, body, hdr...)
				if strings.Contains(rec.Body.String(), "{not json") || !strings.Contains(rec.Body.String(), "malformed stream event") {
					t.Fatalf("%d %s, want an error event, not the upstream's garbage", rec.Code, rec.Body.String())
				}
				if rs := obs.Records(); len(rs) != 1 || rs[0].Outcome != "error" {
					t.Fatalf("records %+v, want one error", rs)
				}
			})
		}
	}
}
