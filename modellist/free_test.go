package modellist

import "testing"

// An unpriced cloud model, or an OpenAI-compatible server on a public
// address, is not free; echo, an explicit zero price and a server on a
// private network are (hostile review 4, finding 6).
func TestFree(t *testing.T) {
	zero, one := int64(0), int64(1)
	for _, tc := range []struct {
		name string
		d    Deployment
		free bool
	}{
		{"echo", Deployment{Provider: "echo", Kind: KindEcho, Local: true}, true},
		{"ollama on loopback", Deployment{Provider: "ollama", Kind: KindOllama, Local: true, APIBase: "http://127.0.0.1:11434"}, true},
		{"vllm on a private address", Deployment{Provider: "hosted_vllm", Kind: KindOpenAI, Local: true, APIBase: "http://10.1.2.3:8000/v1"}, true},
		{"a compose service", Deployment{Provider: "ollama", Kind: KindOllama, Local: true, APIBase: "http://ollama:11434"}, true},
		{"a cluster service", Deployment{Provider: "hosted_vllm", Kind: KindOpenAI, Local: true, APIBase: "http://vllm.ml.svc.cluster.local:8000/v1"}, true},
		{"openai/ on loopback, unpriced", Deployment{Provider: "openai", Kind: KindOpenAI, Local: true, APIBase: "http://127.0.0.1:26999/v1", Model: "gpt-5.9-turbo-preview"}, false},
		{"an unpriced cloud model", Deployment{Provider: "openai", Kind: KindOpenAI, APIBase: "https://api.openai.com/v1", Model: "gpt-5.9-turbo-preview"}, false},
		{"openai/ at a public router", Deployment{Provider: "openai", Kind: KindOpenAI, Local: true, APIBase: "https://openrouter.ai/api/v1"}, false},
		{"a public address", Deployment{Provider: "lm_studio", Kind: KindOpenAI, Local: true, APIBase: "http://203.0.113.9/v1"}, false},
		{"a cloud model priced at zero", Deployment{Provider: "openai", Kind: KindOpenAI, Info: ModelInfo{InputCostPerToken: &zero, OutputCostPerToken: &zero}}, true},
		{"a local model priced", Deployment{Provider: "ollama", Kind: KindOllama, Local: true, APIBase: "http://127.0.0.1:11434", Info: ModelInfo{InputCostPerToken: &zero, OutputCostPerToken: &one}}, false},
		{"a seat", Deployment{Provider: "hosted_vllm", Kind: KindOpenAI, Local: true, APIBase: "http://127.0.0.1:8000/v1", PassthroughAuth: true}, false},
	} {
		free, why := tc.d.Free()
		if free != tc.free || (!free && why == "") {
			t.Errorf("%s: free %v (%q), want %v", tc.name, free, why, tc.free)
		}
	}
}
