package providers

// Claude Code's Bedrock and Vertex modes pointed at the gateway: their
// InvokeModel and rawPredict bodies are Messages bodies with the model in
// the URL and the version and betas in the body. These helpers turn them
// into the Messages requests the hub routes, and frame the Messages stream
// back the way Bedrock frames it.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/internal/jsonfast"
)

// MessagesFromCloud is the Messages body for a Bedrock InvokeModel or a
// Vertex rawPredict body: model set to model; anthropic_version and
// anthropic_beta taken out (the betas are returned, for the anthropic-beta
// header, which every Anthropic-family upstream route reads); stream set
// to *stream when the URL decides it (Bedrock; false is left out), else kept as sent
// (Vertex's streamRawPredict carries it in the body). Every other byte is
// kept.
func MessagesFromCloud(body []byte, model string, stream *bool) ([]byte, []string, error) {
	if !jsonfast.Valid(body) {
		return nil, nil, invalidJSON(body)
	}
	var betas []string
	if v, ok, err := jsonfast.FindMember(body, 0, "anthropic_beta"); err == nil && ok {
		if json.Unmarshal(body[v.Start:v.End], &betas) != nil {
			return nil, nil, BadRequest("anthropic_beta", "anthropic_beta must be a list of strings")
		}
	}
	add := jsonfast.AppendStringMember(nil, "model", model, true)
	if stream != nil && *stream {
		add = jsonfast.AppendKey(add, "stream", false)
		add = jsonfast.AppendBool(add, true)
	}
	out, err := editMembers(body, func(k []byte) bool {
		return jsonfast.KeyIs(k, "model") || jsonfast.KeyIs(k, "anthropic_version") || jsonfast.KeyIs(k, "anthropic_beta") || stream != nil && jsonfast.KeyIs(k, "stream")
	}, add)
	if err != nil {
		return nil, nil, BadRequest("", "request body must be a JSON object")
	}
	return out, betas, nil
}

// cloudModelSuffix is a Bedrock model id's version suffix ("-v1:0",
// "-v2") or a Vertex id's "@version".
var (
	bedrockVersion = regexp.MustCompile(`-v\d+(:\d+)?$`)
	bedrockRegion  = regexp.MustCompile(`^(us|eu|apac|global|jp|au|ca|us-gov)\.`)
)

// CloudModelNames are the names a Bedrock or Vertex model id may be
// configured under, most specific first: the id as sent; a Bedrock ARN's
// last segment; without a cross-region prefix ("us."); without
// "anthropic." and the "-v1:0" suffix, which leaves Anthropic's own id
// (claude-sonnet-4-5-20250929); a Vertex "claude-sonnet-4-5@20250929" as
// Anthropic's id, and without its date.
func CloudModelNames(id string) []string {
	out := []string{id}
	add := func(s string) {
		if s != "" && !containsString(out, s) {
			out = append(out, s)
		}
	}
	s := id
	if strings.HasPrefix(s, "arn:") {
		if i := strings.LastIndexByte(s, '/'); i >= 0 {
			s = s[i+1:]
			add(s)
		}
	}
	s = bedrockRegion.ReplaceAllString(s, "")
	add(s)
	s = strings.TrimPrefix(s, "anthropic.")
	add(s)
	s = bedrockVersion.ReplaceAllString(s, "")
	add(s)
	if name, version, ok := strings.Cut(s, "@"); ok {
		if version != "" && version != "default" {
			add(name + "-" + version)
		}
		add(name)
	}
	return out
}

// BedrockStreamFramer turns a Messages SSE stream into the AWS event
// stream Bedrock's InvokeModelWithResponseStream answers with: each event's
// JSON, base64, in a "chunk" event's {"bytes":…}; an error event becomes an
// exception message. Feed it the SSE bytes in any pieces.
type BedrockStreamFramer struct {
	pending []byte
	enc     *eventstream.Encoder
	payload []byte
	// named: each SSE event is an event of its own name with its data as
	// the payload (ConverseStream), not a base64 chunk.
	named bool
}

// NewBedrockStreamFramer returns a framer for InvokeModelWithResponseStream.
func NewBedrockStreamFramer() *BedrockStreamFramer {
	return &BedrockStreamFramer{enc: eventstream.NewEncoder()}
}

// NewConverseStreamFramer returns a framer for ConverseStream: each SSE
// event the Converse stream translator writes (`event: messageStart`,
// `data: {"role":"assistant"}`) becomes the event-stream message of that
// :event-type with the data as its payload, and an event named for an
// exception (throttlingException) an exception message.
func NewConverseStreamFramer() *BedrockStreamFramer {
	return &BedrockStreamFramer{enc: eventstream.NewEncoder(), named: true}
}

// Write frames every whole SSE event in p (and what came before) to dst.
func (f *BedrockStreamFramer) Write(dst *bytes.Buffer, p []byte) error {
	f.pending = append(f.pending, p...)
	for {
		i := bytes.Index(f.pending, []byte("\n\n"))
		if i < 0 {
			return nil
		}
		ev := f.pending[:i]
		if err := f.frame(dst, ev); err != nil {
			return err
		}
		f.pending = f.pending[i+2:]
	}
}

func (f *BedrockStreamFramer) frame(dst *bytes.Buffer, ev []byte) error {
	var name, data []byte
	for line := range bytes.SplitSeq(ev, []byte("\n")) {
		switch {
		case bytes.HasPrefix(line, []byte("event:")):
			name = bytes.TrimSpace(line[len("event:"):])
		case bytes.HasPrefix(line, []byte("data:")):
			data = append(data, bytes.TrimSpace(line[len("data:"):])...)
		}
	}
	if len(data) == 0 {
		return nil
	}
	msg := eventstream.Message{Headers: eventstream.Headers{
		{Name: ":content-type", Value: eventstream.StringValue("application/json")},
	}}
	if f.named {
		kind, header := "event", ":event-type"
		if bytes.HasSuffix(name, []byte("Exception")) {
			kind, header = "exception", ":exception-type"
		}
		msg.Headers = append(msg.Headers,
			eventstream.Header{Name: header, Value: eventstream.StringValue(string(name))},
			eventstream.Header{Name: ":message-type", Value: eventstream.StringValue(kind)})
		msg.Payload = data
		return f.enc.Encode(dst, msg)
	}
	if string(name) == "error" {
		e := inBandError(data)
		msg.Headers = append(msg.Headers,
			eventstream.Header{Name: ":message-type", Value: eventstream.StringValue("exception")},
			eventstream.Header{Name: ":exception-type", Value: eventstream.StringValue(lowerFirst(apierror.BedrockErrorType(e.Status)))})
		msg.Payload = apierror.BedrockBody(e.Message)
		return f.enc.Encode(dst, msg)
	}
	msg.Headers = append(msg.Headers,
		eventstream.Header{Name: ":event-type", Value: eventstream.StringValue("chunk")},
		eventstream.Header{Name: ":message-type", Value: eventstream.StringValue("event")})
	f.payload = append(f.payload[:0], `{"bytes":"`...)
	f.payload = base64.StdEncoding.AppendEncode(f.payload, data)
	f.payload = append(f.payload, `"}`...)
	msg.Payload = f.payload
	return f.enc.Encode(dst, msg)
}

// lowerFirst is Bedrock's stream exception name: its error type with a
// lower-case first letter (throttlingException).
func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// CountFromBedrock is the count_tokens body for a Bedrock CountTokens
// body: {"input":{"invokeModel":{"body":<base64 InvokeModel body>}}}, the
// InvokeModel body as MessagesFromCloud makes it, without max_tokens,
// which count_tokens does not take; or {"input":{"converse":<a Converse
// request's messages, system and toolConfig>}}, the request as the
// Converse spoke writes it for Anthropic.
func CountFromBedrock(body []byte, model string) ([]byte, []string, error) {
	var env struct {
		Input struct {
			InvokeModel *struct {
				Body []byte `json:"body"`
			} `json:"invokeModel"`
			Converse json.RawMessage `json:"converse"`
		} `json:"input"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Input.Converse) > 0 && env.Input.InvokeModel == nil {
		info, err := ParseConverseRequest(env.Input.Converse, model, false)
		if err != nil {
			return nil, nil, err
		}
		info.SetAlias(model)
		out, err := info.CountBody(nil)
		return out, nil, err
	}
	if env.Input.InvokeModel == nil || len(env.Input.InvokeModel.Body) == 0 {
		return nil, nil, BadRequest("input", `CountTokens takes {"input":{"invokeModel":{"body":<the InvokeModel body, base64>}}} or {"input":{"converse":{"messages":[…]}}}`)
	}
	noStream := false
	out, betas, err := MessagesFromCloud(env.Input.InvokeModel.Body, model, &noStream)
	if err != nil {
		return nil, nil, err
	}
	out, err = editMembers(out, func(k []byte) bool { return jsonfast.KeyIs(k, "max_tokens") }, nil)
	return out, betas, err
}
