package telemetry

import (
	"strconv"

	"github.com/modelgate/modelgate/ledger"
)

// Operation is the gen_ai.operation.name of a client-facing endpoint.
func Operation(e ledger.Endpoint) string {
	switch e {
	case ledger.EndpointGenerateContent:
		return "generate_content"
	case ledger.EndpointEmbeddings:
		return "embeddings"
	default:
		// Chat Completions, Messages and Responses are all chats in the
		// GenAI conventions.
		return "chat"
	}
}

// ProviderName is the gen_ai.provider.name of a models-file provider:
// the conventions' well-known value where there is one.
func ProviderName(p string) string {
	switch p {
	case "gemini":
		return "gcp.gemini"
	case "vertex_ai":
		return "gcp.vertex_ai"
	case "bedrock":
		return "aws.bedrock"
	case "azure":
		return "azure.ai.openai"
	default:
		return p
	}
}

// statusClass is "4xx", "5xx", … like the Prometheus metrics' status label.
func statusClass(status int) string {
	if status <= 0 {
		return "none"
	}
	return strconv.Itoa(status/100) + "xx"
}
