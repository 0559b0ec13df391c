package handlers

import (
	"bytes"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
)

// TestBatchPassthroughHoldsEveryChoice: an OpenAI batch item asking for n
// choices is held at n times its output worst case, as the same request
// over HTTP is admitted: 100k output tokens at $7.50 a million is $0.75
// a choice, so n 6 fits the key's $5 and n 7 does not, and the provider
// never sees the one that does not.
func TestBatchPassthroughHoldsEveryChoice(t *testing.T) {
	s := newPassthroughSetup(t)
	create := func(n int) *httptest.ResponseRecorder {
		var form bytes.Buffer
		mw := multipart.NewWriter(&form)
		_ = mw.WriteField("purpose", "batch")
		fw, _ := mw.CreateFormFile("file", "in.jsonl")
		_, _ = fw.Write([]byte(`{"custom_id":"a","method":"POST","url":"/v1/chat/completions","body":{"model":"oa","n":` + strconv.Itoa(n) +
			`,"messages":[{"role":"user","content":"hi"}],"max_tokens":100000}}` + "\n"))
		_ = mw.Close()
		file := createdID(t, s.send(http.MethodPost, "/v1/files", mw.FormDataContentType(), form.Bytes()))
		return s.send(http.MethodPost, "/v1/batches", "", []byte(`{"input_file_id":"`+file+`","endpoint":"/v1/chat/completions","completion_window":"24h"}`))
	}
	if rr := create(7); rr.Code != http.StatusTooManyRequests {
		t.Fatalf("n 7 past the budget: %d %s", rr.Code, rr.Body)
	}
	if n, _ := s.fake.Creates(); n != 0 {
		t.Fatalf("the provider got %d batches, want none", n)
	}
	createdID(t, create(6))
	if n, _ := s.fake.Creates(); n != 1 {
		t.Fatalf("the provider got %d batches, want the one that fits", n)
	}
}
