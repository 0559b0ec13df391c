package handlers

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestMistypedStreamIsTheClientsFault: `"stream":"true"` used to be read
// as a non-stream request while a lenient upstream streamed; the answer
// was unreadable and counted against the deployment, so any key holder
// could put it into cooldown for everyone. Now it is a 400 naming the
// field in the caller's family, and the deployment never hears of it.
func TestMistypedStreamIsTheClientsFault(t *testing.T) {
	up := newFakeUpstream(t, "lenient", func(w http.ResponseWriter, r *http.Request, n int64) {
		writeOpenAI(w, r, "lenient")
	})
	g, obs := testGateway(t, "model_list:\n"+entry("m", up.srv.URL)+"router_settings:\n  allowed_fails: 1\n  cooldown_time: 60\n", nil)
	for _, tc := range []struct{ path, body, family string }{
		{"/v1/chat/completions", `{"model":"m","stream":"true","messages":[{"role":"user","content":"hi"}]}`, `"param":"stream"`},
		{"/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":"yes"},"messages":[{"role":"user","content":"hi"}]}`, `"param":"stream_options.include_usage"`},
		{"/v1/chat/completions", `{"model":"m","stream":false,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, `"param":"stream"`},
		{"/v1/messages", `{"model":"m","max_tokens":5,"stream":1,"messages":[{"role":"user","content":"hi"}]}`, `"type":"invalid_request_error"`},
	} {
		for range 3 {
			rec := post(g, alice, tc.path, tc.body, "Anthropic-Version", "2023-06-01")
			if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.family) || !strings.Contains(rec.Body.String(), "stream") {
				t.Fatalf("%s %s: %d %s, want a 400 naming the field", tc.path, tc.body, rec.Code, rec.Body.String())
			}
		}
	}
	if n := up.hits.Load(); n != 0 {
		t.Fatalf("the upstream saw %d requests the gateway should have refused", n)
	}
	if s := g.backends["m"][0].State().Snapshot(time.Now()); !s.Healthy || s.RecentFails != 0 {
		t.Fatalf("deployment state %+v, want healthy", s)
	}
	if rec := post(g, alice, "/v1/chat/completions", chatBody("m", true)); rec.Code != http.StatusOK {
		t.Fatalf("a good request after the bad ones: %d %s", rec.Code, rec.Body.String())
	}
	if len(obs.Attempts()) != 1 {
		t.Fatalf("attempts %+v, want only the good request's", obs.Attempts())
	}
}
