package responses

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzMarshalRawList holds marshalRawList to json.Marshal: the same bytes,
// nil where encoding/json fails. The fuzz input is split at NUL bytes into
// the list's items; "\x01" stands for a nil item.
func FuzzMarshalRawList(f *testing.F) {
	for _, s := range []string{
		`{"id":"msg_1","type":"message","role":"user","content":[{"type":"input_text","text":"a <b> & c\u2028"}]}`,
		"{ \"a\" : [ 1 , 2 ] }\x00\"x\"\x00\x01\x00null",
		`{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":\"<&>\"}"}` + "\x00" + "\u2028\"\u2029\"",
		"{\"a\":1}\x00{bad",
		"\x00",
		"[]\x00 \t\n1e5 \x00\"\\u003c\"",
	} {
		f.Add([]byte(s), false)
	}
	f.Add([]byte(nil), true)
	f.Fuzz(func(t *testing.T, in []byte, nilList bool) {
		var list []json.RawMessage
		if !nilList {
			list = []json.RawMessage{}
			for _, part := range bytes.Split(in, []byte{0}) {
				if string(part) == "\x01" {
					part = nil
				}
				list = append(list, part)
			}
		}
		want, err := json.Marshal(list)
		if err != nil {
			want = nil
		}
		if got := marshalRawList(list); !bytes.Equal(got, want) {
			t.Fatalf("marshalRawList(%q) = %q, json.Marshal %q", list, got, want)
		}
	})
}

// BenchmarkMarshalRawList: a stored response's three input items, before
// (json.Marshal) and after.
func BenchmarkMarshalRawList(b *testing.B) {
	list := []json.RawMessage{
		json.RawMessage(`{"id":"msg_a1","type":"message","role":"user","content":[{"type":"input_text","text":"How do I rotate the gateway's keys without downtime?"}]}`),
		json.RawMessage(`{"id":"msg_a2","type":"message","role":"assistant","content":[{"type":"output_text","text":"Add the new key next to the old one, reload, move clients over, remove the old key."}]}`),
		json.RawMessage(`{"id":"msg_a3","type":"message","role":"user","content":[{"type":"input_text","text":"Which clients still use the old key?"}]}`),
	}
	b.Run("json.Marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = json.Marshal(list)
		}
	})
	b.Run("marshalRawList", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			marshalRawList(list)
		}
	})
}
