package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// leakyUpstream answers in kind's wire format, echoing the credentials it
// received in an in-band stream error: after one content event when
// midStream, else as the very first event.
func leakyUpstream(t *testing.T, kind string, midStream bool) *fakeUpstream {
	return newFakeUpstream(t, kind, func(w http.ResponseWriter, r *http.Request, n int64) {
		leak := r.Header.Get("Authorization") + " " + r.Header.Get("X-Api-Key") + " " + r.Header.Get("X-Org-Token")
		switch kind {
		case "ollama":
			w.Header().Set("Content-Type", "application/x-ndjson")
			if midStream {
				fmt.Fprint(w, `{"model":"m","created_at":"2025-01-01T00:00:00Z","message":{"role":"assistant","content":"part"},"done":false}`+"\n")
			}
			fmt.Fprintf(w, `{"error":"bad key %s"}`+"\n", leak)
		case "anthropic":
			w.Header().Set("Content-Type", "text/event-stream")
			if midStream {
				fmt.Fprint(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n")
				fmt.Fprint(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
				fmt.Fprint(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"part\"}}\n\n")
			}
			fmt.Fprintf(w, "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad key %s\"}}\n\n", leak)
		default:
			w.Header().Set("Content-Type", "text/event-stream")
			if midStream {
				streamStart(w, "part")
			}
			fmt.Fprintf(w, "data: {\"error\":{\"message\":\"bad key %s\",\"type\":\"invalid_request_error\",\"param\":\"%s\",\"code\":null}}\n\n", leak, leak)
		}
	})
}

// TestUpstreamSecretsNeverReachClient: an upstream that echoes the
// credentials it got (api_key, an extra_headers token) in an in-band
// stream error, for every client format × upstream kind, pass-through
// included, before and after the client's stream started.
func TestUpstreamSecretsNeverReachClient(t *testing.T) {
	secrets := []string{"sk-upstream-secret", "tok-extra-secret-123"}
	for _, kind := range []string{"openai/m", "anthropic/m", "ollama/m"} {
		for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
			for _, mid := range []bool{true, false} {
				name := fmt.Sprintf("%s%s/mid=%v", kind, path, mid)
				t.Run(name, func(t *testing.T) {
					up := leakyUpstream(t, strings.TrimSuffix(kind, "/m"), mid)
					g, obs := testGateway(t, "model_list:\n"+kindEntry("m", kind, up.srv.URL,
						"extra_headers: {X-Org-Token: tok-extra-secret-123}"), nil)
					body := chatBody("m", true)
					var hdr []string
					if path == "/v1/messages" {
						body = `{"model":"m","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
						hdr = []string{"Anthropic-Version", "2023-06-01"}
					}
					rec := post(g, alice, path, body, hdr...)
					got := rec.Body.String()
					for _, s := range secrets {
						if strings.Contains(got, s) {
							t.Fatalf("client sees %q: %s", s, got)
						}
					}
					if !strings.Contains(got, "bad key") || !strings.Contains(got, "[redacted]") {
						t.Fatalf("the upstream's error did not reach the client, redacted: %d %s", rec.Code, got)
					}
					if up.hits.Load() == 0 {
						t.Fatal("upstream never called")
					}
					if rs := obs.Records(); len(rs) != 1 || rs[0].Outcome != "error" {
						t.Fatalf("records %+v, want one error", rs)
					}
				})
			}
		}
	}
}

// TestCountTokensRelaysUpstreamErrorsRedacted: count_tokens used to copy
// the upstream's body verbatim, key included and not in the gateway's
// error shape.
func TestCountTokensRelaysUpstreamErrorsRedacted(t *testing.T) {
	up := newFakeUpstream(t, "anthropic", func(w http.ResponseWriter, r *http.Request, n int64) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "<html>invalid x-api-key %s</html>", r.Header.Get("X-Api-Key"))
	})
	g, _ := testGateway(t, "model_list:\n"+kindEntry("c", "anthropic/m", up.srv.URL), nil)
	rec := post(g, alice, "/v1/messages/count_tokens", `{"model":"c","messages":[{"role":"user","content":"hi"}]}`,
		"Anthropic-Version", "2023-06-01")
	got := rec.Body.String()
	if rec.Code != http.StatusUnauthorized || strings.Contains(got, "sk-upstream-secret") ||
		!strings.Contains(got, `"type":"error"`) || !strings.Contains(got, "invalid x-api-key [redacted]") {
		t.Fatalf("%d %s, want the upstream's 401 in Anthropic's shape with the key redacted", rec.Code, got)
	}
	if up.hits.Load() != 1 {
		t.Fatalf("upstream saw %d requests", up.hits.Load())
	}
}

// An upstream's error message is relayed verbatim. Servers that echo the
// key they were given (several self-hosted OpenAI-compatible servers and
// proxies do: "invalid api key: <key>") hand the deployment's api_key to
// every client. docs/wire-formats.md §5.6: never include upstream keys.
func TestReviewUpstreamErrorNeverEchoesUpstreamKey(t *testing.T) {
	up := newFakeUpstream(t, "echo-key", func(w http.ResponseWriter, r *http.Request, n int64) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"invalid api key: %s","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`, key)
	})
	g, _ := testGateway(t, oneAlias(up.srv.URL), nil)
	for _, stream := range []bool{false, true} {
		rec := post(g, alice, "/v1/chat/completions", chatBody("m", stream))
		if strings.Contains(rec.Body.String(), "sk-upstream-secret") {
			t.Errorf("stream=%v: client sees the upstream api_key: %s", stream, rec.Body.String())
		}
		// The upstream got the key and its error reached the client,
		// redacted: not a body that merely never mentioned the key.
		if rec.Code != http.StatusUnauthorized || !strings.Contains(rec.Body.String(), "invalid api key: [redacted]") {
			t.Errorf("stream=%v: %d %s, want the upstream's 401 with the key redacted", stream, rec.Code, rec.Body.String())
		}
	}
	if n := up.hits.Load(); n != 2 {
		t.Errorf("upstream saw %d requests, want 2", n)
	}
}
