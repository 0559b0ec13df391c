package handlers

import (
	"context"

	"github.com/modelgate/modelgate/providers"
)

// readResponsesRequest parses a Responses API request and resolves the
// history it refers to (previous_response_id, item_reference) from the
// responses stored under the calling key.
func (g *Gateway) readResponsesRequest(ctx context.Context, c *Call, body []byte) (providers.RequestInfo, error) {
	t, err := providers.ParseResponsesRequest(body)
	if err != nil {
		return providers.RequestInfo{}, err
	}
	t.Created = g.now().Unix()
	if run := c.run; run != nil {
		// A background response's run keeps the id and time its client
		// was answered with.
		t.ID, t.Created = run.ID, run.Created
	}
	// Codex drops a message with a refusal part it cannot parse; its
	// requests say who they are in originator.
	t.RefusalAsText = c.Codex
	if err := g.state.ResolveHistory(ctx, c.Identity, t); err != nil {
		return providers.RequestInfo{}, err
	}
	return t.Info(), nil
}
