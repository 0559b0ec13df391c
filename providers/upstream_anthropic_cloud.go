package providers

// Claude on the hyperscalers. Bedrock and Vertex AI take the Messages
// body with a few differences, all at its top level: the version travels
// in the body, the model in the URL, and (Bedrock) the stream flag in the
// operation's name and the betas in the body. These functions turn a
// Messages body, as any route to an Anthropic upstream produces it, into
// what each cloud takes.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// Versions the clouds require in the body instead of the anthropic-version
// header.
const (
	BedrockAnthropicVersion = "bedrock-2023-05-31"
	VertexAnthropicVersion  = "vertex-2023-10-16"
)

// bedrockBeta reports whether Bedrock accepts a beta flag. Bedrock refuses
// a request with a flag it does not know ("invalid beta flag") where
// Anthropic ignores it, and clients such as Claude Code send first-party
// flags (claude-code-20250219, oauth-…, prompt-caching-scope-…) with
// every request; those are dropped, these go through. Taken from the
// flags AWS lists for Claude's Messages API on Bedrock (model parameters,
// "anthropic_beta"), 2025-11.
func bedrockBeta(flag string) bool {
	switch flag {
	case "computer-use-2024-10-22", "computer-use-2025-01-24", "computer-use-2025-11-24",
		"token-efficient-tools-2025-02-19", "interleaved-thinking-2025-05-14", "dev-full-thinking-2025-05-14",
		"output-128k-2025-02-19", "context-1m-2025-08-07", "context-management-2025-06-27",
		"effort-2025-11-24", "tool-search-tool-2025-10-19", "tool-examples-2025-10-29":
		return true
	}
	return false
}

// BedrockBetas keeps the flags Bedrock accepts from anthropic-beta header
// values (each may list several, comma-separated), in order, once each.
func BedrockBetas(headerValues []string) []string {
	var out []string
	for _, v := range headerValues {
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			if bedrockBeta(f) && !containsString(out, f) {
				out = append(out, f)
			}
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// bedrockDropped are members Bedrock's InvokeModel refuses in a Messages
// body: the model and stream flag (the URL carries both), and first-party
// fields with no Bedrock counterpart (a request with any of them fails
// validation rather than ignoring it).
func bedrockDropped(key []byte) bool {
	for _, k := range [...]string{"model", "stream", "anthropic_version", "anthropic_beta", "metadata", "service_tier", "container", "inference_geo"} {
		if jsonfast.KeyIs(key, k) {
			return true
		}
	}
	return false
}

// BedrockBody is the InvokeModel body for a Messages body: no model or
// stream, anthropic_version set, and the betas (the client's header's,
// then any the body already listed, filtered to those Bedrock knows) as
// anthropic_beta. Keys are matched as encoding/json matches them, every
// duplicate included, so that no second "model" reaches the upstream.
func BedrockBody(body []byte, betas []string) ([]byte, error) {
	if v, ok, err := jsonfast.FindMember(body, 0, "anthropic_beta"); err == nil && ok && body[v.Start] == '[' {
		var listed []string
		// A list holding anything but strings is dropped whole: it could
		// not be a list of flags.
		if json.Unmarshal(body[v.Start:v.End], &listed) == nil {
			for _, f := range listed {
				if bedrockBeta(f) && !containsString(betas, f) {
					betas = append(betas, f)
				}
			}
		}
	}
	add := jsonfast.AppendStringMember(nil, "anthropic_version", BedrockAnthropicVersion, true)
	if len(betas) > 0 {
		add = jsonfast.AppendKey(add, "anthropic_beta", false)
		add = jsonfast.AppendStringList(add, betas)
	}
	return editMembers(body, bedrockDropped, add)
}

// VertexBody is the rawPredict body for a Messages body: no model (it is
// in the URL), anthropic_version set; "stream" stays, since
// streamRawPredict reads it.
func VertexBody(body []byte) ([]byte, error) {
	return editMembers(body, func(k []byte) bool { return jsonfast.KeyIs(k, "model") || jsonfast.KeyIs(k, "anthropic_version") },
		jsonfast.AppendStringMember(nil, "anthropic_version", VertexAnthropicVersion, true))
}

// VertexCountBody is the count-tokens:rawPredict body: a count_tokens
// request with the deployment's model in it (the URL names no model) and
// anthropic_version set.
func VertexCountBody(body []byte, model string) ([]byte, error) {
	add := jsonfast.AppendStringMember(nil, "anthropic_version", VertexAnthropicVersion, true)
	add = jsonfast.AppendStringMember(add, "model", model, false)
	return editMembers(body, func(k []byte) bool { return jsonfast.KeyIs(k, "model") || jsonfast.KeyIs(k, "anthropic_version") }, add)
}

// BedrockCountBody wraps a count_tokens request for Bedrock's CountTokens
// API, which counts an InvokeModel body: {"input":{"invokeModel":{"body":
// <base64 of it>}}}. A count_tokens request has no max_tokens, which an
// InvokeModel body must have; the count does not depend on it.
func BedrockCountBody(body []byte, betas []string) ([]byte, error) {
	invoke, err := BedrockBody(body, betas)
	if err != nil {
		return nil, err
	}
	if _, ok, _ := jsonfast.FindMember(invoke, 0, "max_tokens"); !ok {
		if invoke, err = editMembers(invoke, func([]byte) bool { return false }, []byte(`"max_tokens":1`)); err != nil {
			return nil, err
		}
	}
	out := make([]byte, 0, base64.StdEncoding.EncodedLen(len(invoke))+40)
	out = append(out, `{"input":{"invokeModel":{"body":"`...)
	out = base64.StdEncoding.AppendEncode(out, invoke)
	return append(out, `"}}}`...), nil
}

// BedrockCountResult reads CountTokens' answer ({"inputTokens":N}).
func BedrockCountResult(raw []byte) (int, error) {
	var r struct {
		InputTokens *int `json:"inputTokens"`
	}
	if json.Unmarshal(raw, &r) != nil || r.InputTokens == nil || *r.InputTokens < 0 {
		return 0, errors.New("the token count could not be read")
	}
	return *r.InputTokens, nil
}

// editMembers rebuilds the object body without the members drop selects
// and with add (members, already encoded, comma-separated) first. Nothing
// else is decoded: the rest is copied byte for byte.
func editMembers(body []byte, drop func(key []byte) bool, add []byte) ([]byte, error) {
	type member struct{ start, end int }
	var keep []member
	_, err := jsonfast.EachMember(body, 0, func(k []byte, v jsonfast.Span) {
		if drop(k) {
			return
		}
		// k is a sub-slice of body; its offset follows from the capacities.
		keep = append(keep, member{cap(body) - cap(k), v.End})
	})
	if err != nil {
		return nil, BadRequest("", "request body is not a JSON object")
	}
	out := make([]byte, 0, len(body)+len(add)+2)
	out = append(out, '{')
	out = append(out, add...)
	for i, m := range keep {
		if i > 0 || len(add) > 0 {
			out = append(out, ',')
		}
		out = append(out, body[m.start:m.end]...)
	}
	return append(out, '}'), nil
}

// CloudErrorMessage is the text of an error body from Bedrock or Vertex:
// AWS's {"message"} (or "Message") with the exception name from the
// x-amzn-ErrorType header or "__type", Google's {"error":{"message",
// "status"}}, alone or in a one-element list. The name leads, so that a
// client reads "ThrottlingException: …" or "RESOURCE_EXHAUSTED: …".
func CloudErrorMessage(errorType string, body []byte) string {
	var aws struct {
		Message  string `json:"message"`
		MessageC string `json:"Message"`
		Type     string `json:"__type"`
	}
	var gcp struct {
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	name, msg := "", ""
	trimmed := trimSpace(body)
	switch {
	case len(trimmed) > 0 && trimmed[0] == '[':
		var list []json.RawMessage
		if json.Unmarshal(trimmed, &list) == nil && len(list) > 0 && json.Unmarshal(list[0], &gcp) == nil {
			name, msg = gcp.Error.Status, gcp.Error.Message
		}
	case json.Unmarshal(trimmed, &gcp) == nil && gcp.Error.Message != "":
		name, msg = gcp.Error.Status, gcp.Error.Message
	case json.Unmarshal(trimmed, &aws) == nil:
		msg = aws.Message
		if msg == "" {
			msg = aws.MessageC
		}
		name = aws.Type
	}
	if errorType != "" {
		name = errorType
	}
	// AWS names carry a namespace and a URL ("ThrottlingException:http://…",
	// "com.amazon.coral#AccessDeniedException"); the bare name is enough.
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[:i]
	}
	if i := strings.LastIndexByte(name, '#'); i >= 0 {
		name = name[i+1:]
	}
	if msg == "" {
		text := string(trimmed)
		if len(text) > 512 {
			text = text[:512]
		}
		msg = text
	}
	switch {
	case name != "" && msg != "":
		return name + ": " + msg
	case name != "":
		return name
	}
	return msg
}

// bedrockExceptionType maps an exception Bedrock sends inside a stream to
// the Anthropic error type whose status says the same: throttling is a
// 429 that clients and the gateway retry, validation a 400 that nobody
// should.
func bedrockExceptionType(exception string) string {
	switch strings.ToLower(exception) {
	case "throttlingexception", "modelnotreadyexception", "servicequotaexceededexception":
		return "rate_limit_error"
	case "validationexception":
		return "invalid_request_error"
	case "accessdeniedexception":
		return "permission_error"
	case "resourcenotfoundexception":
		return "not_found_error"
	case "modeltimeoutexception":
		return "timeout_error"
	case "serviceunavailableexception":
		return "overloaded_error"
	}
	return "api_error"
}

// bedrockErrorEvent is an Anthropic error event for an exception Bedrock
// reported in-band.
func bedrockErrorEvent(dst []byte, exception, message string) []byte {
	if message == "" {
		message = "upstream error"
	}
	if exception != "" {
		message = exception + ": " + message
	}
	dst = append(dst, `{"type":"error","error":{"type":`...)
	dst = jsonfast.AppendJSONString(dst, bedrockExceptionType(exception))
	dst = append(dst, `,"message":`...)
	dst = jsonfast.AppendJSONString(dst, message)
	return append(dst, `}}`...)
}
