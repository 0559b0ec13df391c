package providers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/apierror"
)

const echoURL = "http://echo.internal/v1/chat/completions"

func echoPost(t testing.TB, ctx context.Context, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, echoURL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Transport: EchoTransport{}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// The conversation's text is 14+19+5+18 = 56 bytes: 14 prompt tokens;
// the reply is 18 bytes: 4 completion tokens.
const echoConversation = `[
	{"role":"system","content":"You are terse."},
	{"role":"user","content":"First question here"},
	{"role":"assistant","content":"Reply"},
	{"role":"user","content":[{"type":"text","text":"Hello there, "},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},{"type":"text","text":"echo!"}]}]`

func TestEchoNonStream(t *testing.T) {
	resp := echoPost(t, context.Background(), `{"model":"echo/test","messages":`+echoConversation+`}`)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != int64(len(body)) {
		t.Errorf("content length %d, body %d", resp.ContentLength, len(body))
	}
	var r OpenAIResponse
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.ID, "chatcmpl-echo-") || r.Object != "chat.completion" || r.Model != "echo/test" || r.Created == 0 {
		t.Errorf("header fields %+v", r)
	}
	c := r.Choices[0]
	if c.Message.Content == nil || *c.Message.Content != "Hello there, echo!" || c.Message.Role != "assistant" || c.FinishReason != "stop" {
		t.Errorf("choice %+v", c)
	}
	var u OpenAIUsage
	if err := json.Unmarshal(r.Usage, &u); err != nil || counts(&u) != [3]int64{14, 4, 18} {
		t.Errorf("usage %s", r.Usage)
	}
	// Same request, same id: the backend is deterministic.
	again := echoPost(t, context.Background(), `{"model":"echo/test","messages":`+echoConversation+`}`)
	var r2 OpenAIResponse
	if err := json.NewDecoder(again.Body).Decode(&r2); err != nil {
		t.Fatal(err)
	}
	again.Body.Close()
	if r2.ID != r.ID {
		t.Errorf("ids differ: %s %s", r.ID, r2.ID)
	}
}

func TestEchoNoUserMessage(t *testing.T) {
	resp := echoPost(t, context.Background(), `{"model":"echo/x","messages":[{"role":"system","content":"hi"}]}`)
	defer resp.Body.Close()
	var r OpenAIResponse
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	var u OpenAIUsage
	_ = json.Unmarshal(r.Usage, &u)
	if c := r.Choices[0].Message.Content; c == nil || *c != "" || u.PromptTokens != 1 || u.CompletionTokens != 1 {
		t.Errorf("response %+v", r)
	}
}

func TestEchoStream(t *testing.T) {
	for _, includeUsage := range []bool{false, true} {
		opts := ""
		if includeUsage {
			opts = `,"stream_options":{"include_usage":true}`
		}
		resp := echoPost(t, context.Background(), `{"model":"echo/s","stream":true`+opts+`,"messages":`+echoConversation+`}`)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" || resp.ContentLength != -1 {
			t.Fatalf("status %d type %q length %d", resp.StatusCode, resp.Header.Get("Content-Type"), resp.ContentLength)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		chunks, done := parseOllamaSSE(t, body)
		if !done {
			t.Fatal("no [DONE]")
		}
		if chunks[0].Choices[0].Delta.Role != "assistant" {
			t.Errorf("first chunk %+v", chunks[0])
		}
		var deltas []string
		var finish string
		var usage *OpenAIUsage
		for _, c := range chunks[1:] {
			if !strings.HasPrefix(c.ID, "chatcmpl-echo-") || c.Model != "echo/s" {
				t.Errorf("chunk %+v", c)
			}
			if c.Usage != nil {
				usage = c.Usage
				continue
			}
			if p := c.Choices[0].Delta.Content; p != nil {
				deltas = append(deltas, *p)
			}
			if f := c.Choices[0].FinishReason; f != nil {
				finish = *f
			}
		}
		if want := []string{"Hello ", "there, ", "echo!"}; strings.Join(deltas, "|") != strings.Join(want, "|") {
			t.Errorf("deltas %q want %q", deltas, want)
		}
		if finish != "stop" {
			t.Errorf("finish %q", finish)
		}
		if includeUsage != (usage != nil) {
			t.Fatalf("include_usage %v but usage chunk %+v", includeUsage, usage)
		}
		if usage != nil && counts(usage) != [3]int64{14, 4, 18} {
			t.Errorf("usage %+v", *usage)
		}
	}
}

func TestEchoStreamCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := echoPost(t, ctx, `{"model":"echo/s","stream":true,"messages":[{"role":"user","content":"one two three four five"}]}`)
	defer resp.Body.Close()
	r := NewSSEReader(resp.Body, bufio.NewReaderSize(nil, 16))
	if ev, err := r.Next(); err != nil || !strings.Contains(string(ev.Data), `"role":"assistant"`) {
		t.Fatalf("first event %s, %v", ev.Data, err)
	}
	cancel()
	var err error
	for err == nil {
		var ev Event
		ev, err = r.Next()
		if string(ev.Data) == "[DONE]" {
			t.Fatal("stream ran to completion after cancel")
		}
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

func TestEchoStreamClosedBody(t *testing.T) {
	resp := echoPost(t, context.Background(), `{"model":"echo/s","stream":true,"messages":[{"role":"user","content":"a b"}]}`)
	resp.Body.Close()
	if _, err := resp.Body.Read(make([]byte, 10)); err == nil {
		t.Error("read after close succeeded")
	}
}

func TestEchoErrors(t *testing.T) {
	tests := []struct {
		name, method, url, body string
		status                  int
		param                   *string
	}{
		{"invalid JSON", http.MethodPost, echoURL, `{"model":`, 400, nil},
		{"missing messages", http.MethodPost, echoURL, `{"model":"echo/x"}`, 400, ptr("messages")},
		{"bad content", http.MethodPost, echoURL, `{"model":"echo/x","messages":[{"role":"user","content":5}]}`, 400, ptr("messages[0].content")},
		{"wrong path", http.MethodPost, "http://echo.internal/v1/completions", `{}`, 404, nil},
		{"wrong method", http.MethodGet, echoURL, ``, 404, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(tt.method, tt.url, strings.NewReader(tt.body))
			resp, err := (&http.Client{Transport: EchoTransport{}}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.status || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("status %d type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			var e struct {
				Error struct {
					Message string  `json:"message"`
					Type    string  `json:"type"`
					Param   *string `json:"param"`
					Code    *string `json:"code"`
				} `json:"error"`
			}
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatal(err)
			}
			if e.Error.Message == "" || e.Error.Type != apierror.OpenAIType(tt.status) {
				t.Errorf("error %+v", e.Error)
			}
			if (tt.param == nil) != (e.Error.Param == nil) || (tt.param != nil && *tt.param != *e.Error.Param) {
				t.Errorf("param %v want %v", e.Error.Param, tt.param)
			}
		})
	}
}

func ptr(s string) *string { return &s }

func counts(u *OpenAIUsage) [3]int64 {
	return [3]int64{u.PromptTokens, u.CompletionTokens, u.TotalTokens}
}

func TestWordEnd(t *testing.T) {
	for _, s := range []string{"", "one", "  lead and trail  ", "a\nb\tc", "ünï cödé"} {
		var parts []string
		for rest := s; rest != ""; {
			n := wordEnd(rest)
			parts = append(parts, rest[:n])
			rest = rest[n:]
		}
		if strings.Join(parts, "") != s {
			t.Errorf("%q split into %q", s, parts)
		}
		if want := len(strings.Fields(s)); len(parts) != want {
			t.Errorf("%q: %d pieces, want %d", s, len(parts), want)
		}
	}
}
