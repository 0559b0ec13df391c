package providers

import (
	"cmp"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/internal/jsonfast"
)

// The Response object and its output items, shared by the whole-answer
// and the stream translators so both write the same bytes.

// outputItem is one output item being built: a message, a reasoning
// item, or a (custom) tool call.
type outputItem struct {
	kind string // "message", "reasoning", "function_call", "custom_tool_call", "tool_search_call"
	id   string
	// text is the message text, the reasoning text, a function call's
	// arguments or a custom tool call's input.
	text    strings.Builder
	refusal bool // a message whose part is a refusal
	summary bool // reasoning shown as a summary, not as raw reasoning text
	callID  string
	name    string
	ns      string // namespace of a namespaced function
	// index is the output_index; chatIndex the chat tool-call index.
	index     int
	chatIndex int
	added     bool
	done      bool
	// blocks are Anthropic thinking blocks behind a reasoning item,
	// sealed into its encrypted_content; thought is the text of the block
	// under way, which its signature closes.
	blocks  []AnthropicBlock
	thought strings.Builder
}

// think adds reasoning text to the thinking block under way.
func (it *outputItem) think(s string) {
	it.text.WriteString(s)
	it.thought.WriteString(s)
}

// sign closes the thinking block under way with its signature.
func (it *outputItem) sign(signature string) {
	it.blocks = append(it.blocks, AnthropicBlock{Type: "thinking", Thinking: it.thought.String(), Signature: signature})
	it.thought.Reset()
}

func (t *ResponsesTurn) newOutputItem(kind string) *outputItem {
	return &outputItem{kind: kind, id: t.newID(kind)}
}

// appendPart writes a message's content part or a reasoning part.
func (it *outputItem) appendPart(dst []byte, text string) []byte {
	switch {
	case it.kind == "reasoning" && it.summary:
		dst = append(dst, `{"type":"summary_text","text":`...)
	case it.kind == "reasoning":
		dst = append(dst, `{"type":"reasoning_text","text":`...)
	case it.refusal:
		dst = append(dst, `{"type":"refusal","refusal":`...)
	default:
		dst = append(dst, `{"type":"output_text","annotations":[],"logprobs":[],"text":`...)
	}
	dst = jsonfast.AppendQuoted(dst, text, false)
	return append(dst, '}')
}

// appendJSON writes the item: as opened (empty, in progress) or as
// finished.
func (it *outputItem) appendJSON(dst []byte, final bool) []byte {
	status := "in_progress"
	if final {
		status = "completed"
	}
	dst = append(dst, `{"id":`...)
	dst = jsonfast.AppendQuoted(dst, it.id, false)
	dst = append(dst, `,"type":"`...)
	dst = append(dst, it.kind...)
	dst = append(dst, '"')
	text := it.text.String()
	switch it.kind {
	case "message":
		dst = append(dst, `,"status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","role":"assistant","content":[`...)
		if final {
			dst = it.appendPart(dst, text)
		}
		dst = append(dst, ']')
	case "reasoning":
		dst = append(dst, `,"summary":[`...)
		if final && it.summary {
			dst = it.appendPart(dst, text)
		}
		dst = append(dst, ']')
		if final && !it.summary {
			dst = append(dst, `,"content":[`...)
			dst = it.appendPart(dst, text)
			dst = append(dst, ']')
		}
		if final && len(it.blocks) > 0 {
			dst = append(dst, `,"encrypted_content":`...)
			dst = jsonfast.AppendQuoted(dst, sealThinking(it.blocks), false)
		}
	case "function_call", "custom_tool_call":
		dst = append(dst, `,"status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","call_id":`...)
		dst = jsonfast.AppendQuoted(dst, it.callID, false)
		dst = append(dst, `,"name":`...)
		dst = jsonfast.AppendQuoted(dst, it.name, false)
		if it.ns != "" {
			dst = append(dst, `,"namespace":`...)
			dst = jsonfast.AppendQuoted(dst, it.ns, false)
		}
		if it.kind == "function_call" {
			dst = append(dst, `,"arguments":`...)
		} else {
			dst = append(dst, `,"input":`...)
		}
		if !final {
			text = ""
		}
		dst = jsonfast.AppendQuoted(dst, text, false)
	case "tool_search_call":
		dst = append(dst, `,"status":"`...)
		dst = append(dst, status...)
		dst = append(dst, `","call_id":`...)
		dst = jsonfast.AppendQuoted(dst, it.callID, false)
		dst = append(dst, `,"execution":"client","arguments":`...)
		if final {
			dst = appendToolSearchArguments(dst, text)
		} else {
			dst = append(dst, "{}"...)
		}
	}
	return append(dst, '}')
}

// toolCallItem starts the item for a chat tool call named name: a custom
// tool's call becomes a custom_tool_call, a flattened namespace function
// gets its own name and namespace back.
func (t *ResponsesTurn) toolCallItem(callID, name string) *outputItem {
	ref, ok := t.tools[name]
	if !ok {
		ref = toolRef{kind: toolFunction, name: name}
	}
	kind := "function_call"
	switch ref.kind {
	case toolCustom:
		kind = "custom_tool_call"
	case toolSearch:
		kind = "tool_search_call"
	}
	it := t.newOutputItem(kind)
	if callID == "" {
		callID = newCallID()
	}
	it.callID, it.name, it.ns = callID, ref.name, ref.namespace
	return it
}

// customInput unwraps a custom tool call's {"input": "..."} arguments;
// arguments that are not that shape are passed on as the input.
func customInput(args string) string {
	var v struct {
		Input *string `json:"input"`
	}
	if json.Unmarshal([]byte(args), &v) == nil && v.Input != nil {
		return *v.Input
	}
	return args
}

// responsesUsage is the Response's usage (§2).
type responsesUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// chatUsage is a chat completion's usage, as the hub reads it.
type chatUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails *struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails *struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func (u *chatUsage) responses() responsesUsage {
	var r responsesUsage
	if u == nil {
		return r
	}
	r.InputTokens, r.OutputTokens, r.TotalTokens = u.PromptTokens, u.CompletionTokens, u.TotalTokens
	if r.TotalTokens == 0 {
		r.TotalTokens = r.InputTokens + r.OutputTokens
	}
	if u.PromptTokensDetails != nil {
		r.InputTokensDetails.CachedTokens = u.PromptTokensDetails.CachedTokens
	}
	if u.CompletionTokensDetails != nil {
		r.OutputTokensDetails.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return r
}

// responseObject is the Response: every request parameter echoed, null or
// default when unset.
type responseObject struct {
	ID                 string             `json:"id"`
	Object             string             `json:"object"`
	CreatedAt          int64              `json:"created_at"`
	CompletedAt        *int64             `json:"completed_at"`
	Status             string             `json:"status"`
	Background         bool               `json:"background"`
	Conversation       *responseConv      `json:"conversation,omitempty"`
	Error              *responseError     `json:"error"`
	IncompleteDetails  *incompleteDetails `json:"incomplete_details"`
	Instructions       *string            `json:"instructions"`
	MaxOutputTokens    *int64             `json:"max_output_tokens"`
	MaxToolCalls       *int64             `json:"max_tool_calls"`
	Model              string             `json:"model"`
	Output             []json.RawMessage  `json:"output"`
	ParallelToolCalls  bool               `json:"parallel_tool_calls"`
	PreviousResponseID *string            `json:"previous_response_id"`
	PromptCacheKey     *string            `json:"prompt_cache_key"`
	Reasoning          responseReasoning  `json:"reasoning"`
	SafetyIdentifier   *string            `json:"safety_identifier"`
	ServiceTier        string             `json:"service_tier"`
	Store              bool               `json:"store"`
	Temperature        float64            `json:"temperature"`
	Text               responseText       `json:"text"`
	ToolChoice         json.RawMessage    `json:"tool_choice"`
	Tools              []ResponsesTool    `json:"tools"`
	TopP               float64            `json:"top_p"`
	Truncation         string             `json:"truncation"`
	Usage              *responsesUsage    `json:"usage"`
	User               *string            `json:"user"`
	Metadata           map[string]string  `json:"metadata"`
}

// responseConv names the conversation a response belongs to.
type responseConv struct {
	ID string `json:"id"`
}

type responseError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type incompleteDetails struct {
	Reason string `json:"reason"`
}

type responseReasoning struct {
	Effort  *string `json:"effort"`
	Summary *string `json:"summary"`
}

type responseText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity string          `json:"verbosity"`
}

// object is the Response as of now: status, output and usage are the
// caller's, everything else is the request echoed.
func (t *ResponsesTurn) object(status string, output []json.RawMessage, usage *responsesUsage) responseObject {
	r := &t.Req
	o := responseObject{
		ID: t.ID, Object: "response", CreatedAt: t.Created, Status: status, Model: cmp.Or(t.Answered, t.Alias),
		Instructions: r.Instructions, MaxOutputTokens: r.MaxOutputTokens, MaxToolCalls: r.MaxToolCalls,
		Output: output, ParallelToolCalls: r.ParallelToolCalls == nil || *r.ParallelToolCalls,
		PreviousResponseID: r.PreviousResponseID, PromptCacheKey: r.PromptCacheKey,
		SafetyIdentifier: r.SafetyIdentifier, ServiceTier: "default", Store: t.Stored(),
		Temperature: 1, TopP: 1, ToolChoice: r.ToolChoice, Tools: r.Tools, Truncation: "disabled",
		Usage: usage, User: r.User, Metadata: r.Metadata, Background: r.Background != nil && *r.Background,
		Text: responseText{Format: json.RawMessage(`{"type":"text"}`), Verbosity: "medium"},
	}
	if t.ConversationID != "" {
		o.Conversation = &responseConv{ID: t.ConversationID}
	}
	if o.Output == nil {
		o.Output = []json.RawMessage{}
	}
	if o.Tools == nil {
		o.Tools = []ResponsesTool{}
	}
	if o.Metadata == nil {
		o.Metadata = map[string]string{}
	}
	if len(o.ToolChoice) == 0 || string(o.ToolChoice) == "null" {
		o.ToolChoice = json.RawMessage(`"auto"`)
	}
	if r.Temperature != nil {
		o.Temperature = *r.Temperature
	}
	if r.TopP != nil {
		o.TopP = *r.TopP
	}
	if r.Truncation != nil {
		o.Truncation = *r.Truncation
	}
	if r.ServiceTier != nil && *r.ServiceTier != "auto" {
		o.ServiceTier = *r.ServiceTier
	}
	if r.Reasoning != nil {
		o.Reasoning = responseReasoning{Effort: r.Reasoning.Effort, Summary: r.Reasoning.Summary}
	}
	if r.Text != nil {
		if len(r.Text.Format) > 0 && string(r.Text.Format) != "null" {
			o.Text.Format = r.Text.Format
		}
		if r.Text.Verbosity != "" {
			o.Text.Verbosity = r.Text.Verbosity
		}
	}
	return o
}

// summaryWanted reports whether reasoning goes out as a summary (the
// client set reasoning.summary) rather than as raw reasoning text.
func (t *ResponsesTurn) summaryWanted() bool {
	r := t.Req.Reasoning
	return r != nil && r.Summary != nil && *r.Summary != "" && *r.Summary != "none"
}

// finishStatus maps a chat finish_reason to the Response's status.
func finishStatus(finish string) (string, *incompleteDetails) {
	switch finish {
	case "length":
		return "incomplete", &incompleteDetails{Reason: "max_output_tokens"}
	case "content_filter":
		return "incomplete", &incompleteDetails{Reason: "content_filter"}
	}
	return "completed", nil
}

// failureCode is the response.failed error code for an error: one Codex
// and the SDKs know, so they retry what is worth retrying.
func failureCode(e *APIError) string {
	switch {
	case e.Code != "":
		return e.Code
	case e.Status == 429:
		return "rate_limit_exceeded"
	case e.Status == 503 || e.Status == 529:
		return "server_is_overloaded"
	case e.Status >= 500:
		return "server_error"
	}
	return apierror.OpenAIType(e.Status)
}

// finalize sets what the handler stores and records once the answer is
// complete.
func (t *ResponsesTurn) finalize(status string, output []json.RawMessage, body []byte) {
	t.Status, t.Output, t.Response = status, output, body
}

func itoa(n int) string { return strconv.Itoa(n) }
