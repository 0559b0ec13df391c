package secretscan

// A member name is either one the wire formats define (messages, content,
// tool_use_id, …) or one a client chose: a tool argument's name, a
// metadata key, a schema property. Only the first kind is printed in a
// detection's path, and only inside the first kind's objects are ids and
// signatures left alone: a client-chosen name may be the secret itself,
// and a tool argument called "id" is text like any other.

// memberKind is what a member name is to the walker.
type memberKind uint8

const (
	// unknownMember is a name no format defines: its value is free-form
	// and its name is not printed.
	unknownMember memberKind = iota
	// protocolMember is a name of the formats: printed, and its value
	// keeps the protocol's structure.
	protocolMember
	// freeMember is a name of the formats whose value is free-form data
	// chosen by a tool or a client (tool arguments, a JSON result, a
	// schema): printed, and everything under it is scanned, names too.
	freeMember
	// topMember is protocol at the top of a body and free-form below it:
	// "input" is the Responses and embeddings input list at the top, and
	// a tool call's arguments object in a block; "response" is a
	// Responses stream event's response at the top, and a Gemini
	// function's result in a part.
	topMember
)

// kindOf classifies a member name; top says the member is one of the
// body's own.
func kindOf(key string, top bool) memberKind {
	switch k := memberKinds(key); k {
	case topMember:
		if top {
			return protocolMember
		}
		return freeMember
	default:
		return k
	}
}

// knownMember is a name the formats define: printed in paths, and never
// scanned (none of them is a secret).
func knownMember(key string) bool { return memberKinds(key) != unknownMember }

func memberKinds(key string) memberKind {
	switch key {
	case "input", "response":
		return topMember
	case "args", "arguments", "json", "parameters", "input_schema", "inputSchema", "schema", "properties",
		"metadata", "structuredContent", "structured_content", "variables", "extra_body":
		return freeMember
	case
		// Requests: Messages, chat completions, Responses, Gemini, Converse.
		"model", "messages", "system", "content", "text", "type", "role", "id", "name", "tools", "tool_choice",
		"tool_calls", "tool_call_id", "tool_use_id", "call_id", "function", "function_call", "output",
		"instructions", "prompt", "suffix", "stop", "user", "contents", "parts", "systemInstruction",
		"system_instruction", "generationConfig", "generation_config", "toolConfig", "functionCall",
		"functionResponse", "functionDeclarations", "inlineData", "inline_data", "fileData", "file_data",
		"data", "mimeType", "mime_type", "media_type", "fileUri", "file_uri", "thought", "thoughtSignature",
		"thought_signature", "signature", "thinking", "redacted_thinking", "encrypted_content", "summary",
		"reasoning", "reasoning_content", "reasoning_details", "refusal", "source", "url", "image_url",
		"input_audio", "audio", "file", "file_id", "filename", "document", "title", "context", "citations",
		"cited_text", "cache_control", "annotations", "status", "format", "description", "query", "result",
		"error", "transcript", "output_text", "toolUse", "toolResult", "toolUseId", "toolSpec",
		"reasoningContent", "reasoningText", "redactedContent", "image", "video", "guardContent",
		"cachePoint", "inferenceConfig", "previous_response_id", "response_id", "item_id", "conversation",
		"detail", "response_format", "text_format", "stop_sequences", "stopSequences", "include",
		// Answers and stream events.
		"choices", "message", "delta", "content_block", "item", "candidates", "usage", "stop_reason",
		"finish_reason", "finishReason", "stopReason", "partial_json", "contentBlockDelta",
		"contentBlockStart", "start", "messageStart", "messageStop", "part", "logprobs", "output_index",
		"content_index", "sequence_number", "index", "responseId", "modelVersion":
		return protocolMember
	}
	return unknownMember
}

// notText are the members whose string values are ids or opaque signed
// data the upstream must get back unchanged (a thinking signature altered
// is a refused request), and that may well look random. They are left
// alone only where the formats put them: in an object of the protocol's
// own structure, never inside free-form data. Names of formats and states
// (type, role, model, status, …) are scanned: a real one never looks like
// a secret, and a secret put there is text.
func notText(key string) bool {
	switch key {
	case "id", "tool_use_id", "tool_call_id", "call_id", "toolUseId", "previous_response_id",
		"response_id", "item_id", "file_id", "conversation",
		"signature", "thoughtSignature", "thought_signature", "encrypted_content":
		return true
	}
	return false
}

// stateMember are the members that name a format or a state: scanned as
// text, but never a streamed delta's text.
func stateMember(key string) bool {
	switch key {
	case "model", "type", "role", "media_type", "mime_type", "mimeType", "format", "status", "stop_reason",
		"finish_reason", "stopReason", "finishReason":
		return true
	}
	return false
}

// toolIDRank ranks the members that name a tool call.
func toolIDRank(key string) int {
	switch key {
	case "tool_use_id", "tool_call_id", "call_id", "toolUseId":
		return 2
	case "id":
		return 1
	}
	return 0
}

// maxToolID bounds a tool call id shown in a location.
const maxToolID = 128

// printableToolID says whether a tool call id may be shown where a
// detection is reported: an id is client data like any other, so it is
// shown only when it is short, plain and not itself a secret.
func (rs *Rules) printableToolID(id string, s *scratch) bool {
	if id == "" || len(id) > maxToolID {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.' || c == ':') {
			return false
		}
	}
	return len(rs.scan(id, s)) == 0
}
