package handlers

import (
	"fmt"
	"net/http"
	"testing"
)

// TestServiceTierRecordedFromUpstream: the record used to say "standard"
// whatever the upstream reported.
func TestServiceTierRecordedFromUpstream(t *testing.T) {
	openAI := func(tier string) fault {
		return func(w http.ResponseWriter, r *http.Request, n int64) {
			if streaming(r) {
				streamStart(w, "hi")
				fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"service_tier\":%q,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n", tier)
				fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"service_tier\":%q,\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n", tier)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","created":1,"model":"m","service_tier":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, tier)
		}
	}
	anthropic := func(tier string) fault {
		return func(w http.ResponseWriter, r *http.Request, n int64) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2,"service_tier":%q}}`, tier)
		}
	}
	for _, tc := range []struct {
		name, kind, reported, want string
		stream                     bool
		f                          func(string) fault
	}{
		{"openai flex", "openai/m", "flex", "flex", false, openAI},
		{"openai stream priority", "openai/m", "priority", "priority", true, openAI},
		{"openai default is standard", "openai/m", "default", "standard", false, openAI},
		{"anthropic batch", "anthropic/m", "batch", "batch", false, anthropic},
		{"junk is not a tier", "openai/m", "<b>free</b>", "standard", false, openAI},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFakeUpstream(t, tc.name, tc.f(tc.reported))
			g, obs := testGateway(t, "model_list:\n"+kindEntry("m", tc.kind, up.srv.URL), nil)
			rec := post(g, alice, "/v1/chat/completions", chatBody("m", tc.stream))
			if rec.Code != http.StatusOK {
				t.Fatalf("%d %s", rec.Code, rec.Body.String())
			}
			if rs := obs.Records(); len(rs) != 1 || rs[0].ServiceTier != tc.want {
				t.Fatalf("records %+v, want service tier %q", rs, tc.want)
			}
		})
	}
}
