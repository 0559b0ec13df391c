package providers

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// ResponsesRequest is an OpenAI Responses API request (POST /v1/responses)
// as the gateway reads it. Clients send null for optional fields (Codex:
// "reasoning":null), and fields the gateway has no use for (Codex's
// client_metadata, prompt, context_management) are read past: the spec
// asks for lenient parsing, and translated upstreams never see them.
type ResponsesRequest struct {
	Model              string              `json:"model"`
	Input              json.RawMessage     `json:"input"`
	Instructions       *string             `json:"instructions"`
	Tools              []ResponsesTool     `json:"tools"`
	ToolChoice         json.RawMessage     `json:"tool_choice"`
	ParallelToolCalls  *bool               `json:"parallel_tool_calls"`
	Stream             bool                `json:"stream"`
	Store              *bool               `json:"store"`
	PreviousResponseID *string             `json:"previous_response_id"`
	Conversation       json.RawMessage     `json:"conversation"`
	MaxOutputTokens    *int64              `json:"max_output_tokens"`
	Temperature        *float64            `json:"temperature"`
	TopP               *float64            `json:"top_p"`
	Text               *ResponsesText      `json:"text"`
	Reasoning          *ResponsesReasoning `json:"reasoning"`
	Include            []string            `json:"include"`
	Metadata           map[string]string   `json:"metadata"`
	PromptCacheKey     *string             `json:"prompt_cache_key"`
	SafetyIdentifier   *string             `json:"safety_identifier"`
	User               *string             `json:"user"`
	Truncation         *string             `json:"truncation"`
	ServiceTier        *string             `json:"service_tier"`
	Background         *bool               `json:"background"`
	MaxToolCalls       *int64              `json:"max_tool_calls"`
	TopLogprobs        *int64              `json:"top_logprobs"`
}

// ResponsesText is `text`: the output format and verbosity.
type ResponsesText struct {
	Format    json.RawMessage `json:"format,omitempty"`
	Verbosity string          `json:"verbosity,omitempty"`
}

// ResponsesReasoning is `reasoning`.
type ResponsesReasoning struct {
	Effort  *string `json:"effort,omitempty"`
	Summary *string `json:"summary,omitempty"`
}

// ResponsesTool is one entry of `tools`: a flat function, a custom
// (freeform) tool, a namespace of functions, or a hosted tool.
type ResponsesTool struct {
	Type string `json:"type"`
	// Execution is where a tool_search runs: "client" (the client runs
	// it; spoke_responses_tool_search.go) or OpenAI's servers.
	Execution   string          `json:"execution,omitempty"`
	Name        string          `json:"name,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
	Format      json.RawMessage `json:"format,omitempty"`
	Tools       []ResponsesTool `json:"tools,omitempty"`
}

// responsesItem is one input or output item. Only the fields a
// translation reads are typed; the raw item is what gets stored.
type responsesItem struct {
	Type             string                 `json:"type"`
	ID               string                 `json:"id"`
	Role             string                 `json:"role"`
	Content          messageContent         `json:"content"`
	CallID           string                 `json:"call_id"`
	Name             string                 `json:"name"`
	Namespace        string                 `json:"namespace"`
	Arguments        json.RawMessage        `json:"arguments"`
	Input            string                 `json:"input"`
	Output           toolOutputContent      `json:"output"`
	Summary          []responsesSummaryPart `json:"summary"`
	EncryptedContent *string                `json:"encrypted_content"`
	// Execution and Tools are a tool_search_call's or
	// tool_search_output's: who ran the search, and what it loaded.
	Execution string          `json:"execution"`
	Tools     []ResponsesTool `json:"tools"`
}

// isReference: an item_reference, whose type the spec lets clients leave
// out (the official SDKs send only the id).
func (it *responsesItem) isReference() bool {
	return it.Type == "item_reference" || (it.Type == "" && it.Role == "" && it.ID != "")
}

type responsesSummaryPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// responsesPart is one content part of a message or a tool output.
type responsesPart struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
	FileID   string `json:"file_id"`
	Detail   string `json:"detail"`
	FileData string `json:"file_data"`
	Filename string `json:"filename"`
	FileURL  string `json:"file_url"`
}

// toolKind is what a chat function offered upstream stands for.
type toolKind uint8

const (
	toolFunction toolKind = iota
	toolCustom
	toolSearch // a tool search the client runs
)

// toolRef maps a chat function name back to the Responses tool it came
// from: a custom tool's call becomes a custom_tool_call, a namespaced
// function gets its own name and namespace back.
type toolRef struct {
	kind      toolKind
	name      string
	namespace string
}

// ResponsesTurn is one Responses request while the gateway serves it: the
// request, its effective input (stored history first, references
// resolved), and, once answered, the response the client got. Routes from
// Responses clients read it to translate both ways; the handler stores it.
type ResponsesTurn struct {
	Req ResponsesRequest
	// ID is the response id the client sees ("resp_…").
	ID      string
	Created int64
	// Alias is the model the client asked for, resolved.
	Alias string
	// Answered is the model the upstream reported answering, named in
	// the response (the alias until an answer names one): the rule every
	// client format follows (docs/wire-formats.md).
	Answered string
	// Items is the effective input: the stored chain, then this turn's
	// items. NewItems is this turn's alone, each with an id (for storage).
	Items    []json.RawMessage
	NewItems []json.RawMessage
	// ConversationID is the conversation the turn reads its history from
	// and appends to (the conversation parameter), "" if none.
	ConversationID string
	// RefusalAsText sends a refusal as output_text: Codex cannot parse a
	// refusal part and drops the whole message.
	RefusalAsText bool
	// Output and Response are what the client was sent, set when the
	// answer is complete: the output items and the whole response object.
	Output   []json.RawMessage
	Response []byte
	// Status is the response's final status ("completed", "incomplete",
	// "failed").
	Status string

	tools map[string]toolRef // chat function name → Responses tool
	// items are Items read once; newStart is where this turn's own items
	// begin in them (after a previous response's history).
	items    []responsesItem
	newStart int
	// size is the client's body length, for sizing what is written.
	size int
	// nonce and seq make the ids this turn mints (see newID).
	nonce string
	seq   uint64
	// expanded: the gateway put history into Items (a previous response,
	// referenced items), so a native upstream needs the input rewritten.
	expanded bool
	// resolvedBytes is what history and references added to the input.
	resolvedBytes int64
	// referenced: that history or those referenced items carry content
	// given by reference (ReferencesContent), billed again on this turn.
	referenced bool
	// inline is InlineHistory's answer for the body inlineOf (the same
	// slice): the loop breaker and a native upstream's request read it
	// once per turn.
	inline, inlineOf []byte
}

// responsesError is a 400 naming the parameter, as OpenAI words it.
func responsesError(param, format string, args ...any) *APIError {
	return &APIError{Status: 400, Param: param, Code: "invalid_value", Message: fmt.Sprintf(format, args...)}
}

// ParseResponsesRequest reads and checks a Responses request. A client's
// mistake is an *APIError 400 naming the parameter.
func ParseResponsesRequest(body []byte) (*ResponsesTurn, error) {
	t := &ResponsesTurn{}
	if !jsonfast.Valid(body) || !readResponsesRequest(body, t) {
		// The slow path: exactly encoding/json's reading and errors.
		t = &ResponsesTurn{}
		if err := json.Unmarshal(body, &t.Req); err != nil {
			return nil, jsonFieldError(err)
		}
	}
	r := &t.Req
	if r.Model == "" {
		return nil, responsesError("model", "model is required")
	}
	if len(r.Conversation) > 0 && string(r.Conversation) != "null" {
		// A conversation is named by its id, or an object holding it.
		var id string
		if json.Unmarshal(r.Conversation, &id) != nil {
			var obj struct {
				ID string `json:"id"`
			}
			if json.Unmarshal(r.Conversation, &obj) != nil {
				return nil, responsesError("conversation", "conversation must be a conversation id or an object with its id")
			}
			id = obj.ID
		}
		if id == "" {
			return nil, responsesError("conversation", "conversation must name a conversation id")
		}
		if r.PreviousResponseID != nil && *r.PreviousResponseID != "" {
			return nil, responsesError("conversation", "conversation and previous_response_id cannot both be set; use one")
		}
		t.ConversationID = id
		// The gateway holds the conversation: a native upstream gets its
		// items inline, never the id.
		t.expanded = true
	}
	if r.Background != nil && *r.Background {
		if r.Store != nil && !*r.Store {
			return nil, responsesError("background", "background responses are stored; set store: true (or leave it unset) with background: true")
		}
		// The gateway runs a background response itself: a native
		// upstream is asked for an ordinary stream, never background.
		t.expanded = true
	}
	if r.MaxOutputTokens != nil && *r.MaxOutputTokens < 1 {
		return nil, responsesError("max_output_tokens", "max_output_tokens must be at least 1")
	}
	if r.PreviousResponseID != nil && *r.PreviousResponseID == "" {
		r.PreviousResponseID = nil
	}
	if t.items == nil {
		items, err := inputItems(r.Input)
		if err != nil {
			return nil, err
		}
		t.Items, t.items = items, make([]responsesItem, len(items))
		for i, raw := range items {
			if t.items[i], err = decodeItem(raw, paramOf(i)); err != nil {
				return nil, err
			}
		}
	}
	t.assignIDs()
	if err := t.indexTools(); err != nil {
		return nil, err
	}
	t.size = len(body)
	t.newID("")
	t.ID = "resp_" + t.nonce
	return t, nil
}

// parseItem reads a stored item, the fast way when it can.
func parseItem(raw []byte, param string) (responsesItem, error) {
	var it responsesItem
	if jsonfast.Valid(raw) {
		r := jsonfast.NewReader(raw)
		readResponsesItem(&r, jsonfast.SkipSpace(raw, 0), &it)
		if r.OK() {
			return it, nil
		}
	}
	return decodeItem(raw, param)
}

// Stored reports whether the response is kept for later turns (store
// defaults to true).
func (t *ResponsesTurn) Stored() bool { return t.Req.Store == nil || *t.Req.Store }

// Background reports whether the client asked for background: true.
func (t *ResponsesTurn) Background() bool { return t.Req.Background != nil && *t.Req.Background }

// QueuedObject is the Response a background request is answered with at
// once: the request echoed, no output yet, status queued.
func (t *ResponsesTurn) QueuedObject() []byte {
	o := t.object("queued", nil, nil)
	return appendResponseObject(nil, &o)
}

// Prepend puts a stored conversation before this turn's input
// (previous_response_id).
func (t *ResponsesTurn) Prepend(history []json.RawMessage) {
	t.expanded = true
	items := make([]responsesItem, 0, len(history)+len(t.items))
	kept := make([]json.RawMessage, 0, len(history)+len(t.Items))
	for _, raw := range history {
		// The gateway wrote these items; one it cannot read is skipped
		// rather than failing every later turn of the conversation.
		if it, err := parseItem(raw, "input"); err == nil {
			items = append(items, it)
			kept = append(kept, raw)
			t.resolvedBytes += int64(len(raw))
			t.referenced = t.referenced || ReferencesContent(raw)
		}
	}
	t.newStart = len(kept)
	t.items = append(items, t.items...)
	t.Items = append(kept, t.Items...)
}

// ResolveReferences replaces item_reference items with the stored items
// they name; lookup reports false for an id the caller may not read.
func (t *ResponsesTurn) ResolveReferences(lookup func(id string) (json.RawMessage, bool)) error {
	for i := range t.items {
		it := &t.items[i]
		if !it.isReference() {
			continue
		}
		raw, ok := lookup(it.ID)
		if !ok {
			return &APIError{Status: 400, Param: "input", Code: "invalid_value",
				Message: fmt.Sprintf("Item with id %q not found.", it.ID)}
		}
		parsed, err := parseItem(raw, "input")
		if err != nil {
			return &APIError{Status: 400, Param: "input", Code: "invalid_value",
				Message: fmt.Sprintf("Item with id %q cannot be used.", it.ID)}
		}
		t.resolvedBytes += int64(len(raw))
		t.referenced = t.referenced || ReferencesContent(raw)
		t.Items[i], t.items[i] = raw, parsed
		if j := i - t.newStart; j >= 0 {
			// Stored with this turn as what it named.
			t.NewItems[j] = raw
		}
		t.expanded = true
	}
	return nil
}

// inputItems turns `input` into a list of items: a string is one user
// message.
func inputItems(input json.RawMessage) ([]json.RawMessage, error) {
	input = bytes.TrimSpace(input)
	if len(input) == 0 || string(input) == "null" {
		return nil, responsesError("input", "input is required: a string or a list of items")
	}
	if input[0] == '"' {
		var s string
		if err := json.Unmarshal(input, &s); err != nil {
			return nil, responsesError("input", "input is not a valid string")
		}
		msg, _ := json.Marshal(struct {
			Type    string `json:"type"`
			Role    string `json:"role"`
			Content []any  `json:"content"`
		}{"message", "user", []any{map[string]string{"type": "input_text", "text": s}}})
		return []json.RawMessage{msg}, nil
	}
	if input[0] != '[' {
		return nil, responsesError("input", "input must be a string or a list of items")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, responsesError("input", "input must be a string or a list of items")
	}
	for i, it := range items {
		if t := bytes.TrimSpace(it); len(t) == 0 || t[0] != '{' {
			return nil, responsesError(fmt.Sprintf("input[%d]", i), "input[%d] must be an object", i)
		}
	}
	return items, nil
}

// newID mints an id of the kind OpenAI uses for the item type, unique to
// this response: its random part is drawn once per turn, a counter tells
// the items apart.
func (t *ResponsesTurn) newID(typ string) string {
	if t.nonce == "" {
		t.nonce = lowerNonce()
	}
	t.seq++
	var b [45]byte
	return string(appendItemID(b[:0], typ, t.nonce, t.seq))
}

// lowerNonce is strings.ToLower(rand.Text()) in one allocation: 26
// characters of lower-case base32, 130 random bits.
func lowerNonce() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var b [26]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return string(b[:])
}

func itemPrefix(typ string) string {
	prefix := "msg_"
	switch typ {
	case "function_call":
		prefix = "fc_"
	case "function_call_output":
		prefix = "fco_"
	case "custom_tool_call":
		prefix = "ctc_"
	case "custom_tool_call_output":
		prefix = "ctco_"
	case "tool_search_call":
		prefix = "tsc_"
	case "reasoning":
		prefix = "rs_"
	}
	return prefix
}

// jsonFieldError words a decoding error of the request body for the
// client, naming the field when encoding/json knows it.
func jsonFieldError(err error) *APIError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return responsesError(te.Field, "%s must be %s, not %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return responsesError("", "request body is not valid JSON: %v", err)
	}
	return responsesError("", "request body could not be read: %v", err)
}

func fieldError(param string, err error) *APIError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		p := param + "." + te.Field
		return responsesError(p, "%s must be %s, not %s", p, jsonKind(te.Type.Kind().String()), te.Value)
	}
	return responsesError(param, "%s could not be read: %v", param, err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "map", "struct":
		return "an object"
	case "int64", "int", "float64":
		return "a number"
	}
	return "another type"
}

// hostedTool reports tools that run on OpenAI's side; a translated
// upstream cannot run them, so they are left out (Codex sends web_search
// whatever the backend).
func hostedTool(typ string) bool {
	switch typ {
	case "web_search", "web_search_preview", "web_search_2025_08_26", "web_search_preview_2025_03_11",
		"file_search", "code_interpreter", "image_generation", "computer_use", "computer_use_preview",
		"mcp", "tool_search", "programmatic_tool_calling":
		return true
	}
	return false
}

// maxToolName is the longest function name chat upstreams accept.
const maxToolName = 64

// indexTools checks the tools and maps each chat function name that will
// be offered upstream back to the Responses tool it stands for.
func (t *ResponsesTurn) indexTools() error {
	t.tools = make(map[string]toolRef, len(t.Req.Tools))
	add := func(param, chatName string, ref toolRef) error {
		if ref.name == "" {
			return responsesError(param+".name", "%s.name is required", param)
		}
		if _, dup := t.tools[chatName]; dup {
			return responsesError(param+".name", "tool name %q is given twice", chatName)
		}
		t.tools[chatName] = ref
		return nil
	}
	for i, tool := range t.Req.Tools {
		param := fmt.Sprintf("tools[%d]", i)
		switch tool.Type {
		case "function":
			if err := add(param, tool.Name, toolRef{kind: toolFunction, name: tool.Name}); err != nil {
				return err
			}
		case "custom":
			if err := add(param, tool.Name, toolRef{kind: toolCustom, name: tool.Name}); err != nil {
				return err
			}
		case "namespace":
			for j, sub := range tool.Tools {
				sp := fmt.Sprintf("%s.tools[%d]", param, j)
				kind := toolFunction
				if sub.Type == "custom" {
					kind = toolCustom
				} else if sub.Type != "function" && sub.Type != "" {
					return responsesError(sp+".type", "a namespace holds function and custom tools, not %q", sub.Type)
				}
				if err := add(sp, namespacedName(tool.Name, sub.Name), toolRef{kind: kind, name: sub.Name, namespace: tool.Name}); err != nil {
					return err
				}
			}
		case "tool_search":
			if clientToolSearch(&tool) {
				if err := add(param, toolSearchName, toolRef{kind: toolSearch, name: toolSearchName}); err != nil {
					return err
				}
			}
		case "local_shell", "shell", "apply_patch":
			return responsesError(param+".type", "tool type %q is run by OpenAI's own models only; offer it as a function or custom tool for this model", tool.Type)
		case "":
			return responsesError(param+".type", "%s.type is required", param)
		default:
			if !hostedTool(tool.Type) {
				return responsesError(param+".type", "unknown tool type %q", tool.Type)
			}
		}
	}
	return nil
}

// namespacedName flattens a namespace tool's function into one chat name,
// cut to 64 bytes with a stable hash suffix when longer.
func namespacedName(ns, name string) string {
	full := ns + "__" + name
	if len(full) <= maxToolName {
		return full
	}
	var h uint32 = 2166136261
	for i := 0; i < len(full); i++ {
		h = (h ^ uint32(full[i])) * 16777619
	}
	suffix := "_" + strconv.FormatUint(uint64(h), 36)
	return full[:maxToolName-len(suffix)] + suffix
}

// chatName is the function name a call item goes upstream under.
func chatName(name, namespace string) string {
	if namespace != "" {
		return namespacedName(namespace, name)
	}
	return name
}
