package handlers

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// An upstream answer that only looks like success (a redirect, a non-JSON
// 200, JSON for a stream, a stream cut short or ending in an error) reaches
// the client as an error and is booked as one. Each test pins a defect
// that once let such an answer through.

// oneAlias is a models file with one OpenAI-compatible alias "m".
func oneAlias(base string) string { return "model_list:\n" + entry("m", base) }

// An upstream that answers 3xx is not a success. The transport does not
// follow redirects (rightly: the api key must not travel to a new host),
// so the 3xx reaches relayBody, which hands its body to the client as a
// 200 chat completion and books the request as "ok".
func TestReviewUpstreamRedirectIsNotSuccess(t *testing.T) {
	up := newFakeUpstream(t, "redir", func(w http.ResponseWriter, r *http.Request, n int64) {
		http.Redirect(w, r, "https://elsewhere.invalid/v1/chat/completions", http.StatusFound)
	})
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			g, obs := testGateway(t, oneAlias(up.srv.URL), nil)
			rec := post(g, alice, "/v1/chat/completions", chatBody("m", stream))
			if rec.Code != http.StatusBadGateway {
				t.Errorf("status %d, want 502; body %q", rec.Code, rec.Body.String())
			}
			if got := obs.Records(); len(got) != 1 || got[0].Outcome != "error" {
				t.Errorf("ledger records %+v, want one with outcome error", got)
			}
			// The attempt, which metrics count, is a failure too (it used
			// to count as outcome ok).
			if at := obs.Attempts(); len(at) != 1 || at[0].Err != "redirect" || at[0].Status != http.StatusFound {
				t.Errorf("attempts %+v, want one failed with redirect", at)
			}
		})
	}
}

// A 200 whose body is not JSON (a captive portal, a misconfigured
// api_base pointing at a web UI) is passed through byte for byte with
// Content-Type application/json; the OpenAI SDK then fails with a JSON
// decode error instead of an API error, and the ledger says "ok".
func TestReviewNonJSON200IsBadGateway(t *testing.T) {
	up := newFakeUpstream(t, "html", func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>LM Studio</body></html>")
	})
	g, obs := testGateway(t, oneAlias(up.srv.URL), nil)
	rec := post(g, alice, "/v1/chat/completions", chatBody("m", false))
	if rec.Code != http.StatusBadGateway {
		t.Errorf("status %d, want 502; body %q", rec.Code, rec.Body.String())
	}
	if !json.Valid(rec.Body.Bytes()) {
		t.Errorf("body is not JSON: %q", rec.Body.String())
	}
	if got := obs.Records(); len(got) != 1 || got[0].Outcome != "error" {
		t.Errorf("ledger records %+v, want one with outcome error", got)
	}
}

// A stream request answered with a plain JSON completion (servers that
// ignore "stream") yields no SSE events; the gateway then sends a lone
// "data: [DONE]" and books the request as ok: the answer is silently lost.
func TestReviewStreamAnsweredWithJSONIsNotEmptySuccess(t *testing.T) {
	up := newFakeUpstream(t, "nostream", func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"the answer"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
	})
	g, obs := testGateway(t, oneAlias(up.srv.URL), nil)
	rec := post(g, alice, "/v1/chat/completions", chatBody("m", true))
	if rec.Code != http.StatusBadGateway || !strings.Contains(rec.Body.String(), "does not stream") {
		t.Errorf("status %d, want 502 saying the upstream does not stream; body %q", rec.Code, rec.Body.String())
	}
	if got := obs.Records(); len(got) != 1 || got[0].Outcome != "error" {
		t.Errorf("ledger records %+v, want one with outcome error", got)
	}
}

// An OpenAI upstream stream that ends (clean EOF) after some content but
// before any finish_reason or [DONE] is truncated; the gateway appends its
// own [DONE], so the SDK reports a normal end, and the ledger says "ok".
func TestReviewTruncatedOpenAIStreamIsReported(t *testing.T) {
	up := newFakeUpstream(t, "trunc", func(w http.ResponseWriter, r *http.Request, n int64) {
		streamStart(w, "partial ans")
		// Handler returns: chunked terminator, a clean EOF for the gateway.
	})
	g, obs := testGateway(t, oneAlias(up.srv.URL), nil)
	rec := post(g, alice, "/v1/chat/completions", chatBody("m", true))
	events := sseData(t, rec.Body.String())
	if len(events) == 0 {
		t.Fatalf("no events: %q", rec.Body.String())
	}
	last := events[len(events)-1]
	if last == "[DONE]" {
		t.Errorf("truncated upstream stream ends in a normal [DONE]; want an error event. events: %q", events)
	}
	if got := obs.Records(); len(got) != 1 || got[0].Outcome == "ok" {
		t.Errorf("ledger records %+v, want outcome error for a truncated stream", got)
	}
}

// The same for an Anthropic upstream relayed to an Anthropic client: no
// message_stop and no error event reach the client.
func TestReviewTruncatedAnthropicStreamIsReported(t *testing.T) {
	up := newFakeUpstream(t, "trunc-ant", func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"partial\"}}\n\n")
	})
	yaml := fmt.Sprintf("model_list:\n  - model_name: c\n    proxy_params:\n      model: anthropic/m\n      api_base: %s\n      api_key: sk-upstream-secret\n", up.srv.URL)
	g, obs := testGateway(t, yaml, nil)
	rec := post(g, alice, "/v1/messages", `{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		"Anthropic-Version", "2023-06-01")
	body := rec.Body.String()
	if !strings.Contains(body, "event: message_stop") && !strings.Contains(body, "event: error") {
		t.Errorf("truncated stream ends with neither message_stop nor an error event: %q", body)
	}
	if got := obs.Records(); len(got) != 1 || got[0].Outcome == "ok" {
		t.Errorf("ledger records %+v, want outcome error for a truncated stream", got)
	}
}

// sseData lists the data fields of an SSE body.
func sseData(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// Translated streams: an upstream that stops early (clean EOF, no finish)
// gets a synthesised normal ending from Finish, so the client cannot tell
// a cut-off answer from a complete one, and the ledger books it "ok".
func TestReviewTruncatedTranslatedStreamIsReported(t *testing.T) {
	antTrunc := func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
		fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"partial\"}}\n\n")
	}
	oaTrunc := func(w http.ResponseWriter, r *http.Request, n int64) { streamStart(w, "partial") }
	cases := []struct {
		name, kind, path, body string
		up                     fault
		normalEnd              string // what a complete stream ends with
	}{
		{"openai client, anthropic upstream", "anthropic/m", "/v1/chat/completions", chatBody("m", true), antTrunc, `"finish_reason":"stop"`},
		{"anthropic client, openai upstream", "openai/m", "/v1/messages",
			`{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, oaTrunc, "event: message_stop"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newFakeUpstream(t, "trunc", c.up)
			yaml := "model_list:\n" + kindEntry("m", c.kind, up.srv.URL)
			g, obs := testGateway(t, yaml, nil)
			rec := post(g, alice, c.path, c.body)
			body := rec.Body.String()
			if strings.Contains(body, c.normalEnd) && !strings.Contains(body, "error") {
				t.Errorf("truncated upstream stream presented as complete (%s): %q", c.normalEnd, body)
			}
			if got := obs.Records(); len(got) != 1 || got[0].Outcome == "ok" {
				t.Errorf("ledger records %+v, want outcome error for a truncated stream", got)
			}
		})
	}
}

// An upstream that reports an error inside a 200 stream (OpenAI's data-only
// {"error":...}, Anthropic's event: error, Ollama's {"error":...} line) has
// failed; the client must see the error and the ledger must not say "ok".
func TestReviewMidStreamErrorIsAnError(t *testing.T) {
	oaErr := func(w http.ResponseWriter, r *http.Request, n int64) {
		streamStart(w, "partial")
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"model crashed\",\"type\":\"server_error\",\"param\":null,\"code\":null}}\n\n")
	}
	antErr := func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":5,\"output_tokens\":1}}}\n\n")
		fmt.Fprint(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n")
	}
	ollErr := func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		fmt.Fprint(w, "{\"model\":\"m\",\"created_at\":\"2025-07-07T20:22:19.18Z\",\"message\":{\"role\":\"assistant\",\"content\":\"The\"},\"done\":false}\n")
		fmt.Fprint(w, "{\"error\":\"model runner has unexpectedly stopped\"}\n")
	}
	antBody := `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	cases := []struct {
		name, kind, path, body string
		up                     fault
	}{
		{"openai→openai", "openai/m", "/v1/chat/completions", chatBody("m", true), oaErr},
		{"openai→anthropic client", "openai/m", "/v1/messages", antBody, oaErr},
		{"anthropic→anthropic", "anthropic/m", "/v1/messages", antBody, antErr},
		{"anthropic→openai client", "anthropic/m", "/v1/chat/completions", chatBody("m", true), antErr},
		{"ollama→openai client", "ollama/m", "/v1/chat/completions", chatBody("m", true), ollErr},
		{"ollama→anthropic client", "ollama/m", "/v1/messages", antBody, ollErr},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newFakeUpstream(t, "err", c.up)
			yaml := "model_list:\n" + kindEntry("m", c.kind, up.srv.URL)
			g, obs := testGateway(t, yaml, nil)
			rec := post(g, alice, c.path, c.body)
			body := rec.Body.String()
			if !strings.Contains(body, `"error"`) {
				t.Errorf("client stream carries no error: %q", body)
			}
			if got := obs.Records(); len(got) != 1 || got[0].Outcome == "ok" {
				t.Errorf("ledger records outcome %q status %d, want error", got[0].Outcome, got[0].Status)
			}
		})
	}
}
