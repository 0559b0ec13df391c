package handlers

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/providers"
)

// compactInstructions asks the alias for the summary a compaction keeps.
const compactInstructions = "You are compacting a conversation so it can continue in a fresh context window. " +
	"Write a concise but complete summary of everything above: the user's goals and constraints, decisions made, " +
	"facts learned, files and commands involved, tool results that matter, and the work still to do. " +
	"Write only the summary."

// compactPrefix starts the item a compaction returns, so the model that
// reads it later knows what it is.
const compactPrefix = "Summary of the conversation so far (compacted by the gateway):\n\n"

// serveCompact answers POST /v1/responses/compact. OpenAI returns an
// opaque, encrypted compaction item only its own models read; the gateway
// serves every backend, so it compacts by asking the request's model (the
// alias) for a summary, through the same path as any Responses request
// (limits, budget and ledger included), and returns the summary as one
// user message item that any backend can take back as input.
func (g *Gateway) serveCompact(w http.ResponseWriter, r *http.Request) {
	cf := providers.FormatResponses
	// The outer body is read like every other: bounded, decoded, and
	// counted in body memory until the inner request is built from it.
	outer := &clientRequest{buf: g.bodyPool.Get().(*[]byte)}
	defer g.releaseRequest(outer)
	if apiErr := g.readBody(w, r, outer); apiErr != nil {
		apiErr.Write(w, cf)
		return
	}
	var req map[string]json.RawMessage
	if err := json.Unmarshal(outer.body, &req); err != nil {
		(&providers.APIError{Status: http.StatusBadRequest, Message: "the body must be a JSON object: " + err.Error()}).Write(w, cf)
		return
	}
	var model string
	if json.Unmarshal(req["model"], &model) != nil || model == "" {
		(&providers.APIError{Status: http.StatusBadRequest, Param: "model", Message: "model is required"}).Write(w, cf)
		return
	}
	if len(req["input"]) == 0 && len(req["previous_response_id"]) == 0 {
		(&providers.APIError{Status: http.StatusBadRequest, Param: "input", Message: "give input, previous_response_id or both: the conversation to compact"}).Write(w, cf)
		return
	}
	input := inputItems(req["input"])
	ask, _ := json.Marshal(map[string]any{"type": "message", "role": "user",
		"content": []map[string]string{{"type": "input_text", "text": "Summarise the conversation above as instructed."}}})
	inner := map[string]any{"model": model, "input": append(input, ask), "instructions": compactInstructions,
		"store": false, "stream": false}
	if p := req["previous_response_id"]; len(p) > 0 {
		inner["previous_response_id"] = p
	}
	ib, _ := json.Marshal(inner)
	g.releaseRequest(outer)
	// The summary is asked through the core as a Responses call of the
	// same caller; its answer is kept for the compaction built from it.
	c := callOf(r, cf)
	c.Body = ib
	rw := newBufferSink()
	g.Serve(r.Context(), &c, rw)
	if rw.status != http.StatusOK {
		rw.replay(httpSink(w, cf))
		return
	}
	var resp struct {
		Output []struct {
			Type    string `json:"type"`
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage json.RawMessage `json:"usage"`
	}
	if err := json.Unmarshal(rw.body.Bytes(), &resp); err != nil {
		(&providers.APIError{Status: http.StatusBadGateway, Message: "the model's summary could not be read: " + err.Error()}).Write(w, cf)
		return
	}
	var summary strings.Builder
	for _, it := range resp.Output {
		for _, c := range it.Content {
			if it.Type == "message" && c.Type == "output_text" {
				summary.WriteString(c.Text)
			}
		}
	}
	if summary.Len() == 0 {
		(&providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q returned no summary to compact to", model)}).Write(w, cf)
		return
	}
	nonce := strings.ToLower(rand.Text())
	item := map[string]any{"id": "msg_" + nonce, "type": "message", "role": "user", "status": "completed",
		"content": []map[string]string{{"type": "input_text", "text": compactPrefix + summary.String()}}}
	usage := resp.Usage
	if len(usage) == 0 {
		usage = json.RawMessage(`{"input_tokens":0,"output_tokens":0,"total_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens_details":{"reasoning_tokens":0}}`)
	}
	out, _ := json.Marshal(map[string]any{"id": "cmp_" + nonce, "object": "response.compaction",
		"created_at": g.now().Unix(), "output": []any{item}, "usage": usage})
	writeJSON(w, http.StatusOK, out)
}
