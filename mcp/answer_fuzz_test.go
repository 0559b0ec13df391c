package mcp

import (
	"bufio"
	"bytes"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// FuzzSSEGuard: whatever a server streams, what the guard passes on is
// events the SDK reads without ending the session: every line a field,
// every message event one JSON-RPC message that, on a call's stream, is
// not an answer to another id, and on the standalone GET stream no answer
// at all; and a call's stream ends at its first bad event.
func FuzzSSEGuard(f *testing.F) {
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"), true, false)
	f.Add([]byte("id: 3\nretry: 10\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\r\n\r\n"), false, true)
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\ndata: {\"jsonrpc\":\n\n"), true, false)
	f.Add([]byte("<html>\n\n: comment\nevent: ping\ndata: x\n\n"), false, true)
	f.Add([]byte("data: {\"jsonrpc\":\"2.0\",\n"+"data: \"id\":1,\"result\":{}}"), true, false)
	f.Add([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n\n"), false, true)
	id, _ := jsonrpc.MakeID(float64(1))
	f.Fuzz(func(t *testing.T, in []byte, isCall, standalone bool) {
		standalone = standalone && !isCall
		g := &sseGuard{src: bufio.NewReaderSize(bytes.NewReader(in), 16), body: io.NopCloser(nil), id: id, isCall: isCall, max: 256,
			standalone: standalone, streams: newCallStreams(func(string) {})}
		out, err := io.ReadAll(g)
		if err != nil {
			t.Fatal(err)
		}
		for ev := range bytes.SplitSeq(out, []byte("\n\n")) {
			var data [][]byte
			message := true
			for line := range bytes.SplitSeq(ev, []byte("\n")) {
				if len(line) == 0 {
					continue
				}
				key, val, ok := bytes.Cut(line, []byte(":"))
				if !ok {
					t.Fatalf("line %q is not a field in %q", line, out)
				}
				switch string(key) {
				case "data":
					data = append(data, bytes.TrimSpace(val))
				case "event":
					message = string(bytes.TrimSpace(val)) == "message"
				}
			}
			joined := bytes.Join(data, []byte("\n"))
			if len(joined) == 0 || !message {
				// The SDK skips events with no data and other names.
				continue
			}
			msg, err := jsonrpc.DecodeMessage(joined)
			if err != nil {
				t.Fatalf("event %q passed on: %v", ev, err)
			}
			if r, ok := msg.(*jsonrpc.Response); ok && isCall && r.ID != id {
				t.Fatalf("an answer to id %v passed on for call %v", r.ID.Raw(), id.Raw())
			}
			if _, ok := msg.(*jsonrpc.Response); ok && standalone {
				t.Fatalf("an answer passed on on the standalone stream: %q", ev)
			}
		}
	})
}
