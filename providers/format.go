package providers

// Format is a wire format spoken by a client or an upstream.
type Format uint8

const (
	// FormatOpenAI is OpenAI Chat Completions (JSON, SSE without event names).
	FormatOpenAI Format = iota
	// FormatAnthropic is Anthropic Messages (JSON, SSE with event names).
	FormatAnthropic
	// FormatOllama is Ollama's native /api/chat (JSON, NDJSON streams).
	FormatOllama
	// FormatResponses is the OpenAI Responses API (JSON, SSE with event
	// names and sequence numbers).
	FormatResponses
	// FormatGemini is Google's Gemini API (generateContent; JSON, SSE of
	// whole GenerateContentResponse chunks).
	FormatGemini
	// FormatEmbeddings is OpenAI's embeddings API (a client format only;
	// errors in OpenAI's family).
	FormatEmbeddings
	// FormatGeminiEmbed is Gemini's embedContent and batchEmbedContents
	// (a client format only; errors in Google's family).
	FormatGeminiEmbed
)

// errorFamily is the format whose error shape a client of f reads.
func (f Format) errorFamily() Format {
	switch f {
	case FormatGeminiEmbed:
		return FormatGemini
	case FormatEmbeddings, FormatResponses:
		return FormatOpenAI
	}
	return f
}

func (f Format) String() string {
	switch f {
	case FormatOpenAI:
		return "openai"
	case FormatAnthropic:
		return "anthropic"
	case FormatOllama:
		return "ollama"
	case FormatResponses:
		return "responses"
	case FormatGemini:
		return "gemini"
	case FormatEmbeddings:
		return "embeddings"
	case FormatGeminiEmbed:
		return "gemini embeddings"
	}
	return "unknown"
}
