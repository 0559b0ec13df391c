package providers

import (
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// chunker writes OpenAI chat.completion.chunk SSE events straight into the
// caller's buffer. The constant start of every chunk is rendered once per
// stream so an event costs only its own delta.
type chunker struct {
	head []byte // {"id":…,"object":…,"created":…,"model":…,"choices":
}

func (c *chunker) init(id string, created int64, model string) {
	h := c.head[:0]
	h = append(h, `{"id":`...)
	h = jsonfast.AppendJSONString(h, id)
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	h = jsonfast.AppendJSONString(h, model)
	h = append(h, `,"choices":`...)
	c.head = h
}

// open starts a one-choice chunk; the caller appends the delta object and
// then calls close.
func (c *chunker) open(dst []byte) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, c.head...)
	return append(dst, `[{"index":0,"delta":`...)
}

func (c *chunker) close(dst []byte, finish string) []byte {
	dst = append(dst, `,"finish_reason":`...)
	if finish == "" {
		dst = append(dst, "null"...)
	} else {
		dst = jsonfast.AppendJSONString(dst, finish)
	}
	return append(dst, "}],\"usage\":null}\n\n"...)
}

func (c *chunker) role(dst []byte) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"role":"assistant","content":""}`...)
	return c.close(dst, "")
}

func (c *chunker) content(dst []byte, s string) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"content":`...)
	dst = jsonfast.AppendJSONString(dst, s)
	dst = append(dst, '}')
	return c.close(dst, "")
}

// contentToken is content with s already a valid JSON string token, copied
// as it is (the translators' fast paths pass the upstream's own token).
func (c *chunker) contentToken(dst, tok []byte) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"content":`...)
	dst = append(dst, tok...)
	dst = append(dst, '}')
	return c.close(dst, "")
}

// argsToken is a tool call's next arguments fragment, tok being a valid
// JSON string token.
func (c *chunker) argsToken(dst []byte, index int, tok []byte) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"function":{"arguments":`...)
	dst = append(dst, tok...)
	dst = append(dst, `}}]}`...)
	return c.close(dst, "")
}

// delta writes a chunk whose delta is one string member.
func (c *chunker) delta(dst []byte, key, s string) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"`...)
	dst = append(dst, key...)
	dst = append(dst, `":`...)
	dst = jsonfast.AppendJSONString(dst, s)
	dst = append(dst, '}')
	return c.close(dst, "")
}

// reasoning uses the non-standard delta.reasoning that Ollama's and other
// local servers' OpenAI layers emit.
func (c *chunker) reasoning(dst []byte, s string) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"reasoning":`...)
	dst = jsonfast.AppendJSONString(dst, s)
	dst = append(dst, '}')
	return c.close(dst, "")
}

func (c *chunker) toolCall(dst []byte, index int, id, name string, args []byte) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"id":`...)
	dst = jsonfast.AppendJSONString(dst, id)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = jsonfast.AppendJSONString(dst, name)
	dst = append(dst, `,"arguments":`...)
	dst = jsonfast.AppendJSONString(dst, args)
	dst = append(dst, "}}]}"...)
	return c.close(dst, "")
}

func (c *chunker) finish(dst []byte, reason string) []byte {
	dst = c.open(dst)
	dst = append(dst, "{}"...)
	return c.close(dst, reason)
}

// usage is the include_usage chunk: no choices, only the totals.
func (c *chunker) usage(dst []byte, u Usage) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, c.head...)
	dst = append(dst, `[],"usage":`...)
	dst = appendOpenAIUsage(dst, u)
	return append(dst, "}\n\n"...)
}
