package batch

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeMessageBatch: any body is either refused with a 4xx or
// decoded into at most the limit of requests, each with a valid unique
// custom_id, a model, and a body that is a JSON object.
func FuzzDecodeMessageBatch(f *testing.F) {
	f.Add(messageBatch(2))
	f.Add([]byte(`{"requests":[{"custom_id":"a","params":{"model":"m","stream":false}}]}`))
	f.Add([]byte(`{"requests":[{"custom_id":"a","params":{"model":""}}]}`))
	f.Add([]byte(`{"requests":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		reqs, e := DecodeMessageBatch(body, 3)
		if e != nil {
			if e.Status/100 != 4 || e.Message == "" {
				t.Fatalf("refusal %d %q", e.Status, e.Message)
			}
			return
		}
		checkRequests(t, reqs, 3, true)
	})
}

// FuzzDecodeOpenAIInput: the same for a JSONL input file.
func FuzzDecodeOpenAIInput(f *testing.F) {
	f.Add(openAIInput(2))
	f.Add([]byte("\n\n{\"custom_id\":\"é\",\"method\":\"POST\",\"url\":\"/v1/chat/completions\",\"body\":{\"model\":\"m\"}}"))
	f.Add([]byte(`{"custom_id":"a","method":"GET","url":"/v1/chat/completions","body":{}}`))
	f.Fuzz(func(t *testing.T, content []byte) {
		reqs, e := DecodeOpenAIInput(content, "/v1/chat/completions", 3)
		if e != nil {
			if e.Status/100 != 4 || e.Message == "" {
				t.Fatalf("refusal %d %q", e.Status, e.Message)
			}
			return
		}
		checkRequests(t, reqs, 3, false)
	})
}

func checkRequests(t *testing.T, reqs []Request, limit int, strict bool) {
	t.Helper()
	if len(reqs) == 0 || len(reqs) > limit {
		t.Fatalf("%d requests", len(reqs))
	}
	seen := map[string]bool{}
	for _, q := range reqs {
		if !validCustomID(q.CustomID, strict) || seen[q.CustomID] || strings.ContainsRune(q.CustomID, 0) {
			t.Fatalf("custom_id %q", q.CustomID)
		}
		seen[q.CustomID] = true
		var m map[string]json.RawMessage
		if json.Unmarshal(q.Body, &m) != nil || q.Model == "" {
			t.Fatalf("body %q model %q", q.Body, q.Model)
		}
	}
}

// FuzzDecodeUpload: any multipart body is refused with a 4xx or yields a
// batch file within the limit, valid UTF-8, with a bounded name.
func FuzzDecodeUpload(f *testing.F) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.SetBoundary("xyz")
	_ = mw.WriteField("purpose", "batch")
	_ = mw.WriteField("expires_after[seconds]", "3600")
	fw, _ := mw.CreateFormFile("file", "in.jsonl")
	_, _ = fw.Write(openAIInput(1))
	_ = mw.Close()
	f.Add(b.Bytes())
	f.Add([]byte("--xyz\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\n\xff\r\n--xyz--\r\n"))
	f.Fuzz(func(t *testing.T, body []byte) {
		up, e := DecodeUpload(bytes.NewReader(body), "multipart/form-data; boundary=xyz", 256)
		if e != nil {
			if e.Status/100 != 4 || e.Message == "" {
				t.Fatalf("refusal %d %q", e.Status, e.Message)
			}
			return
		}
		if up.Purpose != "batch" || len(up.Content) > 256 || len(up.Filename) > 255 || up.Filename == "" || !utf8.ValidString(up.Filename) || !utf8.Valid(up.Content) ||
			bytes.IndexByte(up.Content, 0) >= 0 || strings.ContainsRune(up.Filename, 0) {
			t.Fatalf("upload %+v", up)
		}
	})
}

// TestUploadNameCutOnARune: a long file name is cut to 255 bytes on a
// rune's start.
func TestUploadNameCutOnARune(t *testing.T) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	_ = mw.WriteField("purpose", "batch")
	fw, _ := mw.CreateFormFile("file", strings.Repeat("é", 200))
	_, _ = fw.Write([]byte("{}\n"))
	_ = mw.Close()
	up, e := DecodeUpload(&b, mw.FormDataContentType(), 1024)
	if e != nil || len(up.Filename) != 254 || !utf8.ValidString(up.Filename) {
		t.Fatalf("%d bytes %q %v", len(up.Filename), up.Filename, e)
	}
}
