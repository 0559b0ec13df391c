package handlers

import (
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// TestLedgerEndpointLabelsAreKnown: the label a client format gives its
// usage records is one the ledger names, so reports group it as intended;
// and the labels are the stored ones (report dimensions, so they must not
// drift).
func TestLedgerEndpointLabelsAreKnown(t *testing.T) {
	known := map[ledger.Endpoint]bool{
		ledger.EndpointChatCompletions: true, ledger.EndpointMessages: true, ledger.EndpointResponses: true,
		ledger.EndpointGenerateContent: true, ledger.EndpointEmbeddings: true, ledger.EndpointBedrockConverse: true,
	}
	for _, f := range providers.ClientFormats() {
		if e := ledgerEndpoints[f]; !known[e] {
			t.Errorf("format %v labels its records %q, which the ledger does not name", f, e)
		}
	}
	for f, want := range map[providers.Format]ledger.Endpoint{providers.FormatOpenAI: "chat_completions", providers.FormatAnthropic: "messages",
		providers.FormatResponses: "responses", providers.FormatGemini: "generate_content", providers.FormatEmbeddings: "embeddings",
		providers.FormatGeminiEmbed: "embeddings", providers.FormatConverse: "bedrock_converse"} {
		if got := ledgerEndpoints[f]; got != want {
			t.Errorf("%v endpoint %q, want %q", f, got, want)
		}
	}
}
