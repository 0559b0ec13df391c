package upstream

import (
	"context"
	"net/http"
	"reflect"
	"testing"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/providers"
)

// Each kind's endpoint, built once, sends each client format to the URL
// its upstream serves it at, with the credentials header the upstream
// reads, and counts tokens the kind's way.
func TestEndpointPerKind(t *testing.T) {
	const base = "http://up.test"
	type want struct {
		chat, stream, embed, responses string
		header, value                  string // the credentials header
		counter                        tokenCounter
	}
	for _, tc := range []struct {
		name string
		d    modellist.Deployment
		want want
	}{
		{"openai cloud", modellist.Deployment{Provider: "openai", Kind: modellist.KindOpenAI, APIBase: base + "/v1", APIKey: "sk-1", ResponsesNative: true},
			want{base + "/v1/chat/completions", base + "/v1/chat/completions", base + "/v1/embeddings", base + "/v1/responses", "Authorization", "Bearer sk-1", tiktokenCount{}}},
		{"hosted_vllm", modellist.Deployment{Provider: "hosted_vllm", Kind: modellist.KindOpenAI, APIBase: base + "/v1", APIKey: "x", Local: true},
			want{base + "/v1/chat/completions", base + "/v1/chat/completions", base + "/v1/embeddings", base + "/v1/chat/completions", "Authorization", "Bearer x", serverCount{vllm: true}}},
		{"llamacpp", modellist.Deployment{Provider: "llamacpp", Kind: modellist.KindOpenAI, APIBase: base + "/v1", APIKey: "x", Local: true},
			want{base + "/v1/chat/completions", base + "/v1/chat/completions", base + "/v1/embeddings", base + "/v1/chat/completions", "Authorization", "Bearer x", serverCount{}}},
		{"lm_studio", modellist.Deployment{Provider: "lm_studio", Kind: modellist.KindOpenAI, APIBase: base + "/v1", APIKey: "x", Local: true},
			want{base + "/v1/chat/completions", base + "/v1/chat/completions", base + "/v1/embeddings", base + "/v1/chat/completions", "Authorization", "Bearer x", estimateCount{}}},
		{"ollama native responses", modellist.Deployment{Provider: "ollama", Kind: modellist.KindOllama, APIBase: base, Local: true, ResponsesNative: true},
			want{base + "/api/chat", base + "/api/chat", base + "/api/embed", base + "/v1/responses", "Authorization", "", estimateCount{}}},
		{"anthropic", modellist.Deployment{Provider: "anthropic", Kind: modellist.KindAnthropic, APIBase: base, APIKey: "sk-ant"},
			want{base + "/v1/messages", base + "/v1/messages", "", base + "/v1/messages", "X-Api-Key", "sk-ant", anthropicCount{}}},
		{"gemini", modellist.Deployment{Provider: "gemini", Kind: modellist.KindGemini, APIBase: base, APIKey: "g-key", Model: "gemini-2.5-flash"},
			want{base + "/v1beta/models/gemini-2.5-flash:generateContent", base + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
				base + "/v1beta/models/gemini-2.5-flash:batchEmbedContents", base + "/v1beta/models/gemini-2.5-flash:generateContent",
				"X-Goog-Api-Key", "g-key", geminiCount{url: base + "/v1beta/models/gemini-2.5-flash:countTokens"}}},
		{"echo", modellist.Deployment{Provider: "echo", Kind: modellist.KindEcho, Local: true},
			want{echoURL, echoURL, echoEmbedURL, echoURL, "Authorization", "", estimateCount{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(&tc.d)
			client := ClientMeta{}
			url := func(cf providers.Format, stream bool) string {
				u, _, err := e.prepare(cf, nil, client, stream)
				if err != nil {
					t.Fatal(err)
				}
				return u
			}
			got := want{url(providers.FormatOpenAI, false), url(providers.FormatOpenAI, true), url(providers.FormatEmbeddings, false),
				url(providers.FormatResponses, false), tc.want.header, "", e.counter()}
			h := http.Header{}
			e.(fixedCredentials).credentials(h)
			got.value = h.Get(tc.want.header)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("endpoint\n got %+v\nwant %+v", got, tc.want)
			}
			x := e.(extraEndpoints)
			if x.embeddings() != (tc.want.embed != "") {
				t.Errorf("embeddings() = %v with embeddings URL %q", x.embeddings(), tc.want.embed)
			}
			if x.nativeResponses() != tc.d.ResponsesNative {
				t.Errorf("nativeResponses() = %v", x.nativeResponses())
			}
		})
	}
}

// An Anthropic client's query, version and betas reach an Anthropic
// upstream, unless extra_headers pin them; no other client's do. Claude
// Code's ?beta=true reaches Anthropic's own API only.
func TestAnthropicPassThrough(t *testing.T) {
	client := ClientMeta{Query: "beta=true", AnthropicVersion: []string{"2024-01-01"}, AnthropicBeta: []string{"tools-1"}}
	send := func(d *modellist.Deployment, cf providers.Format) *http.Request {
		t.Helper()
		b := New(d, Options{Client: http.DefaultClient, State: &State{}})
		req, err := b.NewRequest(context.Background(), cf, client, []byte(`{}`), false)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	d := &modellist.Deployment{Provider: "anthropic", Kind: modellist.KindAnthropic, APIBase: "http://up.test", APIKey: "sk-ant-0123456789"}
	req := send(d, providers.FormatAnthropic)
	if req.URL.String() != "http://up.test/v1/messages" || req.Header.Get("Anthropic-Version") != "2024-01-01" || req.Header.Get("Anthropic-Beta") != "tools-1" {
		t.Errorf("Anthropic client: %s version %q beta %q", req.URL, req.Header.Get("Anthropic-Version"), req.Header.Get("Anthropic-Beta"))
	}
	own := *d
	own.APIBase = "https://api.anthropic.com"
	if req := send(&own, providers.FormatAnthropic); req.URL.String() != "https://api.anthropic.com/v1/messages?beta=true" {
		t.Errorf("Anthropic's own API: %s, want ?beta=true kept", req.URL)
	}
	req = send(d, providers.FormatOpenAI)
	if req.URL.RawQuery != "" || req.Header.Get("Anthropic-Version") != "2023-06-01" || req.Header.Get("Anthropic-Beta") != "" {
		t.Errorf("chat client: %s version %q beta %q", req.URL, req.Header.Get("Anthropic-Version"), req.Header.Get("Anthropic-Beta"))
	}
	d.ExtraHeaders = map[string]string{"Anthropic-Beta": "pinned"}
	req = send(d, providers.FormatAnthropic)
	if req.Header.Get("Anthropic-Beta") != "pinned" || req.Header.Get("Anthropic-Version") != "2024-01-01" {
		t.Errorf("pinned beta: version %q beta %q", req.Header.Get("Anthropic-Version"), req.Header.Get("Anthropic-Beta"))
	}
	if req.Header.Get("X-Api-Key") != "sk-ant-0123456789" {
		t.Errorf("the deployment's key is missing")
	}
}

// What only some kinds do is asked of the endpoint once, in New: a
// cloud's credentials go stale and are renewed, its secrets are redacted,
// and Vertex's token connections are closed; the kinds reached with a
// fixed key do none of that, and only they have embeddings.
func TestEndpointCapabilities(t *testing.T) {
	const base = "http://up.test"
	for _, tc := range []struct {
		name                          string
		d                             modellist.Deployment
		renews, holds, closes, embeds bool
	}{
		{"openai", modellist.Deployment{Provider: "openai", Kind: modellist.KindOpenAI, APIBase: base, APIKey: "sk-1"}, false, false, false, true},
		{"anthropic", modellist.Deployment{Provider: "anthropic", Kind: modellist.KindAnthropic, APIBase: base, APIKey: "sk-ant"}, false, false, false, false},
		{"bedrock", modellist.Deployment{Provider: "bedrock", Kind: modellist.KindBedrock, APIBase: base, Model: "m",
			AWS: &modellist.AWSAccount{Region: "us-east-1", AccessKeyID: "AKIAEXAMPLEKEY01", SecretAccessKey: "secret-access-key-0123"}}, true, true, false, false},
		{"vertex", modellist.Deployment{Provider: "vertex_ai", Kind: modellist.KindVertex, APIBase: base, Model: "m",
			Vertex: &modellist.VertexAccount{Project: "p", Location: "global", ADC: true}}, true, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := New(&tc.d, Options{Client: http.DefaultClient, State: &State{}})
			if got := [4]bool{b.renewer != nil, b.holder != nil, b.closer != nil, b.Embeddings()}; got != [4]bool{tc.renews, tc.holds, tc.closes, tc.embeds} {
				t.Errorf("renews, holds secrets, closes, embeds = %v", got)
			}
			if got := b.CredentialsRefused(http.StatusUnauthorized, ""); got != tc.renews {
				t.Errorf("CredentialsRefused(401) = %v", got)
			}
			b.Close()
		})
	}
}
