package secretscan

import (
	"encoding/json"
	"strings"
	"testing"
)

// benchPrompt is the bench's ordinary system prompt (bench/main.go
// chatBody): about 850 bytes of English that says "key" and "keys".
var benchPrompt = "You are the platform team's assistant. Answer briefly and precisely; prefer code over prose; " +
	"cite the file and line when you refer to code; never invent APIs. " +
	strings.Repeat("Keep answers under two hundred words unless asked for more. ", 12)

// BenchmarkScanPrompt is the scan of the bench's system prompt alone.
func BenchmarkScanPrompt(b *testing.B) {
	rs := rules(b)
	b.SetBytes(int64(len(benchPrompt)))
	b.ReportAllocs()
	for b.Loop() {
		if hits := rs.Scan(benchPrompt); len(hits) != 0 {
			b.Fatalf("hits in an ordinary prompt: %v", hits)
		}
	}
}

// BenchmarkRedactBodyChatTurn is the bench's ~2 KB chat request: the
// system prompt, a short history about keys and a question.
func BenchmarkRedactBodyChatTurn(b *testing.B) {
	rs := rules(b)
	body, err := json.Marshal(map[string]any{
		"model": "m",
		"messages": []map[string]string{
			{"role": "system", "content": benchPrompt},
			{"role": "user", "content": "How do I rotate the gateway's keys without downtime?"},
			{"role": "assistant", "content": "Add the new key next to the old one, reload Caddy, move clients over, then remove the old key and reload again."},
			{"role": "user", "content": "And how do I see which clients still use the old key? Show the report request."},
		},
		"max_tokens": 512,
	})
	if err != nil {
		b.Fatal(err)
	}
	names := NewPlaceholders(10, 10).For("bench")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := rs.RedactBody(body, names); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAnswerResponses is the log action's scan of a Responses answer
// to the bench's request (the system prompt echoed as instructions, a
// short output): the whole object, and its output alone, as the gateway
// scans it.
func BenchmarkAnswerResponses(b *testing.B) {
	instructions, _ := json.Marshal(benchPrompt)
	body := []byte(`{"id":"resp_0123","object":"response","created_at":1764400000,"status":"completed","error":null,"instructions":` +
		string(instructions) + `,"model":"oa","output":[{"id":"msg_0123","type":"message","status":"completed","role":"assistant",` +
		`"content":[{"type":"output_text","annotations":[],"text":"Add the new key next to the old one, reload, move clients over, then remove the old key."}]}],` +
		`"parallel_tool_calls":true,"store":false,"tools":[],"usage":{"input_tokens":512,"output_tokens":24,"total_tokens":536},"metadata":{}}`)
	fw := &Firewall{rules: rules(b)}
	names := NewPlaceholders(10, 10).For("bench")
	for _, c := range []struct{ name, member string }{{"whole", ""}, {"output", "output"}} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, dets := fw.RedactAnswerMember(Log, body, c.member, names); len(dets) != 0 {
					b.Fatalf("detections in an ordinary answer: %v", dets)
				}
			}
		})
	}
}
