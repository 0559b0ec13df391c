package handlers

import (
	"testing"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// TestLedgerEndpointLabelsAreKnown: the label a client format gives its
// usage records is one the ledger names, so reports group it as intended.
func TestLedgerEndpointLabelsAreKnown(t *testing.T) {
	known := map[ledger.Endpoint]bool{
		ledger.EndpointChatCompletions: true, ledger.EndpointMessages: true, ledger.EndpointResponses: true,
		ledger.EndpointGenerateContent: true, ledger.EndpointEmbeddings: true, ledger.EndpointBedrockConverse: true,
	}
	for _, f := range providers.ClientFormats() {
		if e := ledger.Endpoint(f.LedgerEndpoint()); !known[e] {
			t.Errorf("format %v labels its records %q, which the ledger does not name", f, e)
		}
	}
}
