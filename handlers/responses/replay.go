package responses

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/providers"
)

// WantsReplay reports whether GET /v1/responses/{id} asks for the
// response's events (the SDKs' retrieve with stream: Python sends
// ?stream=true, openai-go a JSON body {"stream":true}), and after which
// sequence number (starting_after) they start; -1 is from the first.
func WantsReplay(r *http.Request) (bool, int, *providers.APIError) {
	q, err := ledger.ParseRawQuery(r.URL.RawQuery)
	if err != nil {
		return false, 0, &providers.APIError{Status: http.StatusBadRequest, Message: err.Error()}
	}
	stream := q.Get("stream") == "true"
	if !stream && r.Body != nil && r.ContentLength != 0 {
		var body struct {
			Stream bool `json:"stream"`
		}
		b, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		stream = json.Unmarshal(b, &body) == nil && body.Stream
	}
	after := -1
	if v := q.Get("starting_after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return false, 0, &providers.APIError{Status: http.StatusBadRequest, Param: "starting_after", Message: "starting_after must be a non-negative integer (a sequence number)"}
		}
		after = n
	}
	return stream, after, nil
}

// ReplayStored writes a stored response as the stream of events that
// makes it: response.created, each output item added, its text or
// arguments, done, and response.completed (or the stored status), with
// sequence numbers from 0. The stored response holds the final items, so
// each text comes as one delta.
func ReplayStored(out Out, stored json.RawMessage, after int) {
	var resp map[string]json.RawMessage
	_ = json.Unmarshal(stored, &resp)
	var output []json.RawMessage
	_ = json.Unmarshal(resp["output"], &output)
	var status string
	_ = json.Unmarshal(resp["status"], &status)

	h := out.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	out.Start(http.StatusOK)
	seq := 0
	emit := func(typ string, fields map[string]any) {
		defer func() { seq++ }()
		if seq <= after {
			return
		}
		fields["type"] = typ
		fields["sequence_number"] = seq
		b, _ := json.Marshal(fields)
		ev := append([]byte("event: "+typ+"\ndata: "), b...)
		_ = out.Write(append(ev, "\n\n"...))
	}
	start := map[string]json.RawMessage{}
	for k, v := range resp {
		start[k] = v
	}
	start["status"] = json.RawMessage(`"in_progress"`)
	start["output"] = json.RawMessage(`[]`)
	delete(start, "usage")
	emit("response.created", map[string]any{"response": start})
	if status == "queued" {
		// A background response another instance runs: nothing more is
		// stored yet.
		_ = out.Flush()
		return
	}
	emit("response.in_progress", map[string]any{"response": start})
	if status == "in_progress" {
		_ = out.Flush()
		return
	}
	for i, raw := range output {
		var item struct {
			ID        string `json:"id"`
			Type      string `json:"type"`
			Arguments string `json:"arguments"`
			Content   []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		}
		_ = json.Unmarshal(raw, &item)
		var open map[string]json.RawMessage
		_ = json.Unmarshal(raw, &open)
		open["status"] = json.RawMessage(`"in_progress"`)
		switch item.Type {
		case "message":
			open["content"] = json.RawMessage(`[]`)
		case "function_call":
			open["arguments"] = json.RawMessage(`""`)
		}
		emit("response.output_item.added", map[string]any{"output_index": i, "item": open})
		switch item.Type {
		case "message":
			var m struct {
				Content []json.RawMessage `json:"content"`
			}
			_ = json.Unmarshal(raw, &m)
			full := m.Content
			for j, c := range item.Content {
				base := map[string]any{"item_id": item.ID, "output_index": i, "content_index": j}
				with := func(extra map[string]any) map[string]any {
					out := map[string]any{}
					for k, v := range base {
						out[k] = v
					}
					for k, v := range extra {
						out[k] = v
					}
					return out
				}
				if c.Type != "output_text" {
					emit("response.content_part.added", with(map[string]any{"part": full[j]}))
					emit("response.content_part.done", with(map[string]any{"part": full[j]}))
					continue
				}
				emit("response.content_part.added", with(map[string]any{"part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}}))
				emit("response.output_text.delta", with(map[string]any{"delta": c.Text, "logprobs": []any{}}))
				emit("response.output_text.done", with(map[string]any{"text": c.Text, "logprobs": []any{}}))
				emit("response.content_part.done", with(map[string]any{"part": full[j]}))
			}
		case "function_call":
			emit("response.function_call_arguments.delta", map[string]any{"item_id": item.ID, "output_index": i, "delta": item.Arguments})
			emit("response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": i, "arguments": item.Arguments})
		}
		emit("response.output_item.done", map[string]any{"output_index": i, "item": raw})
	}
	end := "response.completed"
	switch status {
	case "failed":
		end = "response.failed"
	case "incomplete":
		end = "response.incomplete"
	case "cancelled":
		end = "response.cancelled"
	}
	emit(end, map[string]any{"response": json.RawMessage(stored)})
	_ = out.Flush()
}
