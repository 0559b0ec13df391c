package modellist

import "strings"

// category decides which of api_base and api_key a provider needs.
type category int

const (
	// catCloud: api_base defaults to the provider's endpoint; a real key is required.
	catCloud category = iota
	// catLocalCompat: a chat-completions-compatible local server; api_base is
	// required and so is api_key (any value), because the OpenAI clients such
	// servers are built for refuse to run without one and some servers check it.
	catLocalCompat
	// catLocalNative: Ollama's native API; api_base required, api_key optional.
	catLocalNative
	// catEcho: built in, takes neither.
	catEcho
	// catAccount: a hyperscaler (bedrock, vertex_ai) that authenticates
	// with the account's own credentials instead of an api_key, and whose
	// endpoint follows from its region.
	catAccount
)

type providerSpec struct {
	kind      Kind
	cat       category
	cloudBase string // default api_base for catCloud
}

// lookupProvider is a switch rather than a map so that the table cannot be
// mutated at run time.
func lookupProvider(prefix string) (providerSpec, bool) {
	switch prefix {
	case "openai":
		return providerSpec{KindOpenAI, catCloud, "https://api.openai.com/v1"}, true
	case "anthropic":
		return providerSpec{KindAnthropic, catCloud, "https://api.anthropic.com"}, true
	case "groq":
		return providerSpec{KindOpenAI, catCloud, "https://api.groq.com/openai/v1"}, true
	case "mistral":
		return providerSpec{KindOpenAI, catCloud, "https://api.mistral.ai/v1"}, true
	case "deepseek":
		return providerSpec{KindOpenAI, catCloud, "https://api.deepseek.com/v1"}, true
	case "openrouter":
		return providerSpec{KindOpenAI, catCloud, "https://openrouter.ai/api/v1"}, true
	case "together_ai":
		return providerSpec{KindOpenAI, catCloud, "https://api.together.xyz/v1"}, true
	case "fireworks_ai":
		return providerSpec{KindOpenAI, catCloud, "https://api.fireworks.ai/inference/v1"}, true
	case "xai":
		return providerSpec{KindOpenAI, catCloud, "https://api.x.ai/v1"}, true
	case "gemini":
		// The native API: thinking, signatures and cached tokens survive,
		// which Google's OpenAI-compatible layer loses or hides.
		return providerSpec{KindGemini, catCloud, "https://generativelanguage.googleapis.com"}, true
	case "hosted_vllm", "lm_studio", "llamacpp":
		return providerSpec{KindOpenAI, catLocalCompat, ""}, true
	case "ollama", "ollama_chat":
		return providerSpec{KindOllama, catLocalNative, ""}, true
	case "echo":
		return providerSpec{KindEcho, catEcho, ""}, true
	case "bedrock":
		return providerSpec{KindBedrock, catAccount, ""}, true
	case "vertex_ai":
		return providerSpec{KindVertex, catAccount, ""}, true
	}
	return providerSpec{}, false
}

// knownProviders is sorted so that messages are stable.
func knownProviders() []string {
	return []string{
		"anthropic", "bedrock", "deepseek", "echo", "fireworks_ai", "gemini", "groq", "hosted_vllm", "llamacpp",
		"lm_studio", "mistral", "ollama", "ollama_chat", "openai", "openrouter", "together_ai", "vertex_ai", "xai",
	}
}

func knownList() string { return strings.Join(knownProviders(), ", ") }
