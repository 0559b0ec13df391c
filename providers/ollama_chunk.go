package providers

import (
	"crypto/rand"
	"strconv"
	"unicode/utf8"
)

// newID is prefix plus 26 random base32 characters, which also satisfy
// Anthropic's ^[a-zA-Z0-9_-]+$ id rule.
func newID(prefix string) string { return prefix + rand.Text() }

// chunker writes OpenAI chat.completion.chunk SSE events straight into the
// caller's buffer. The constant start of every chunk is rendered once per
// stream so an event costs only its own delta.
type chunker struct {
	head []byte // {"id":…,"object":…,"created":…,"model":…,"choices":
}

func (c *chunker) init(id string, created int64, model string) {
	h := c.head[:0]
	h = append(h, `{"id":`...)
	h = appendJSONString(h, id)
	h = append(h, `,"object":"chat.completion.chunk","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	h = appendJSONString(h, model)
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
		dst = appendJSONString(dst, finish)
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
	dst = appendJSONString(dst, s)
	dst = append(dst, '}')
	return c.close(dst, "")
}

// reasoning uses the non-standard delta.reasoning that Ollama's and other
// local servers' OpenAI layers emit.
func (c *chunker) reasoning(dst []byte, s string) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"reasoning":`...)
	dst = appendJSONString(dst, s)
	dst = append(dst, '}')
	return c.close(dst, "")
}

func (c *chunker) toolCall(dst []byte, index int, id, name string, args []byte) []byte {
	dst = c.open(dst)
	dst = append(dst, `{"tool_calls":[{"index":`...)
	dst = strconv.AppendInt(dst, int64(index), 10)
	dst = append(dst, `,"id":`...)
	dst = appendJSONString(dst, id)
	dst = append(dst, `,"type":"function","function":{"name":`...)
	dst = appendJSONString(dst, name)
	dst = append(dst, `,"arguments":`...)
	dst = appendJSONString(dst, args)
	dst = append(dst, "}}]}"...)
	return c.close(dst, "")
}

func (c *chunker) finish(dst []byte, reason string) []byte {
	dst = c.open(dst)
	dst = append(dst, "{}"...)
	return c.close(dst, reason)
}

// usage is the include_usage chunk: no choices, only the totals.
func (c *chunker) usage(dst []byte, prompt, completion int64) []byte {
	dst = append(dst, "data: "...)
	dst = append(dst, c.head...)
	dst = append(dst, `[],"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, prompt, 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, completion, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, prompt+completion, 10)
	return append(dst, "}}\n\n"...)
}

func appendDone(dst []byte) []byte { return append(dst, "data: [DONE]\n\n"...) }

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string literal. Like encoding/json
// it replaces invalid UTF-8 with U+FFFD and escapes U+2028/U+2029, so the
// output is the same text json.Marshal would give minus HTML escaping.
func appendJSONString[T string | []byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
