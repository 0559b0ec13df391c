package handlers

import (
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// ledgerEndpoints is the endpoint a usage record names for a request
// from a client of each format (indexed by providers.Format, as the
// parsers are): the ledger's own vocabulary, kept in this one table. An
// ingress that wraps a format (Bedrock InvokeModel and Vertex rawPredict
// around Messages, the Responses WebSocket) names its own in newRecord.
// Ollama is an upstream format only, so it has none.
var ledgerEndpoints = [providers.FormatCount]ledger.Endpoint{
	providers.FormatOpenAI:      ledger.EndpointChatCompletions,
	providers.FormatAnthropic:   ledger.EndpointMessages,
	providers.FormatResponses:   ledger.EndpointResponses,
	providers.FormatGemini:      ledger.EndpointGenerateContent,
	providers.FormatEmbeddings:  ledger.EndpointEmbeddings,
	providers.FormatGeminiEmbed: ledger.EndpointEmbeddings,
	providers.FormatConverse:    ledger.EndpointBedrockConverse,
}
