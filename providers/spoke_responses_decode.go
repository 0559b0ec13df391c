package providers

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelgate/modelgate/providers/internal/jsonfast"
)

// itemContent is a message's content or a tool's output: a string or a
// list of parts, decoded once when the request is read.
type itemContent struct {
	set   bool // present and not null
	text  string
	parts []responsesPart // nil when the content is a string
}

// itemContentError is a content or output of the wrong JSON type.
type itemContentError struct{ field string }

func (e itemContentError) Error() string {
	return e.field + " must be a string or a list of content parts"
}

func (c *itemContent) unmarshal(b []byte, field string) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*c = itemContent{}
		return nil
	case b[0] == '"':
		c.set, c.parts = true, nil
		return json.Unmarshal(b, &c.text)
	case b[0] == '[':
		c.set, c.text = true, ""
		c.parts = []responsesPart{}
		if err := json.Unmarshal(b, &c.parts); err != nil {
			return itemContentError{field}
		}
		return nil
	}
	return itemContentError{field}
}

// messageContent and toolOutputContent name their field in errors.
type messageContent struct{ itemContent }
type toolOutputContent struct{ itemContent }

func (c *messageContent) UnmarshalJSON(b []byte) error    { return c.unmarshal(b, "content") }
func (c *toolOutputContent) UnmarshalJSON(b []byte) error { return c.unmarshal(b, "output") }

// The fast path reads a Responses request in one walk of the document
// (after one json.Valid) with the chat reader's fastReader: every field
// the gateway uses, every input item and its content parts. Anything it
// does not handle exactly as encoding/json would (a duplicate or
// case-folded key, a wrong type) sends the caller to the json.Unmarshal
// path, whose results and errors it must equal (FuzzResponsesRequest).
func readResponsesRequest(body []byte, t *ResponsesTurn) bool {
	r := newFastReader(body)
	q := &t.Req
	var mask uint64
	seen := func(bit uint) {
		if mask&(1<<bit) != 0 {
			r.ok = false
		}
		mask |= 1 << bit
	}
	r.object(jsonfast.SkipSpace(body, 0), func(k []byte, i int) int {
		switch string(k) {
		case "model":
			seen(0)
			return r.str(i, &q.Model)
		case "input":
			seen(1)
			end := r.raw(i, &q.Input)
			if r.ok && r.b[i] == '[' {
				r.array(i, func(j int) int {
					var it responsesItem
					e := r.item(j, &it)
					if r.ok {
						t.Items = append(t.Items, r.b[j:e:e])
						t.items = append(t.items, it)
					}
					return e
				})
			}
			return end
		case "instructions":
			seen(2)
			return r.strPtr(i, &q.Instructions)
		case "tools":
			seen(3)
			if r.isNull(i) {
				q.Tools = nil
				return i + len("null")
			}
			q.Tools = []ResponsesTool{}
			return r.array(i, func(j int) int {
				q.Tools = append(q.Tools, ResponsesTool{})
				return r.responsesTool(j, &q.Tools[len(q.Tools)-1])
			})
		case "tool_choice":
			seen(4)
			return r.raw(i, &q.ToolChoice)
		case "parallel_tool_calls":
			seen(5)
			return r.boolPtr(i, &q.ParallelToolCalls)
		case "stream":
			seen(6)
			return r.boolean(i, &q.Stream)
		case "store":
			seen(7)
			return r.boolPtr(i, &q.Store)
		case "previous_response_id":
			seen(8)
			return r.strPtr(i, &q.PreviousResponseID)
		case "conversation":
			seen(9)
			return r.raw(i, &q.Conversation)
		case "max_output_tokens":
			seen(10)
			return r.intPtr(i, &q.MaxOutputTokens)
		case "temperature":
			seen(11)
			return r.floatPtr(i, &q.Temperature)
		case "top_p":
			seen(12)
			return r.floatPtr(i, &q.TopP)
		case "text":
			seen(13)
			if r.isNull(i) {
				q.Text = nil
				return i + len("null")
			}
			q.Text = &ResponsesText{}
			var m uint32
			return r.object(i, func(k []byte, j int) int {
				switch string(k) {
				case "format":
					r.seen(&m, 1)
					return r.raw(j, &q.Text.Format)
				case "verbosity":
					r.seen(&m, 2)
					return r.str(j, &q.Text.Verbosity)
				}
				return r.unknown(j, k, "format", "verbosity")
			})
		case "reasoning":
			seen(14)
			if r.isNull(i) {
				q.Reasoning = nil
				return i + len("null")
			}
			q.Reasoning = &ResponsesReasoning{}
			var m uint32
			return r.object(i, func(k []byte, j int) int {
				switch string(k) {
				case "effort":
					r.seen(&m, 1)
					return r.strPtr(j, &q.Reasoning.Effort)
				case "summary":
					r.seen(&m, 2)
					return r.strPtr(j, &q.Reasoning.Summary)
				}
				return r.unknown(j, k, "effort", "summary")
			})
		case "include":
			seen(15)
			if r.isNull(i) {
				q.Include = nil
				return i + len("null")
			}
			q.Include = []string{}
			return r.array(i, func(j int) int {
				q.Include = append(q.Include, "")
				return r.str(j, &q.Include[len(q.Include)-1])
			})
		case "metadata":
			seen(16)
			if r.isNull(i) {
				q.Metadata = nil
				return i + len("null")
			}
			q.Metadata = map[string]string{}
			return r.object(i, func(k []byte, j int) int {
				var v string
				end := r.str(j, &v)
				if r.isNull(j) {
					// json.Unmarshal stores "" for a null map value.
					v = ""
				}
				q.Metadata[string(k)] = v
				return end
			})
		case "prompt_cache_key":
			seen(17)
			return r.strPtr(i, &q.PromptCacheKey)
		case "safety_identifier":
			seen(18)
			return r.strPtr(i, &q.SafetyIdentifier)
		case "user":
			seen(19)
			return r.strPtr(i, &q.User)
		case "truncation":
			seen(20)
			return r.strPtr(i, &q.Truncation)
		case "service_tier":
			seen(21)
			return r.strPtr(i, &q.ServiceTier)
		case "background":
			seen(22)
			return r.boolPtr(i, &q.Background)
		case "max_tool_calls":
			seen(23)
			return r.intPtr(i, &q.MaxToolCalls)
		case "top_logprobs":
			seen(24)
			return r.intPtr(i, &q.TopLogprobs)
		}
		return r.unknown(i, k, "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
			"stream", "store", "previous_response_id", "conversation", "max_output_tokens", "temperature", "top_p",
			"text", "reasoning", "include", "metadata", "prompt_cache_key", "safety_identifier", "user",
			"truncation", "service_tier", "background", "max_tool_calls", "top_logprobs")
	})
	return r.ok
}

// strPtr reads a string into a new pointer; null sets it nil.
func (r *fastReader) strPtr(i int, dst **string) int {
	if r.isNull(i) {
		*dst = nil
		return i + len("null")
	}
	s := new(string)
	*dst = s
	return r.str(i, s)
}

func (r *fastReader) responsesTool(i int, t *ResponsesTool) int {
	var m uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.seen(&m, 1<<0)
			return r.str(j, &t.Type)
		case "name":
			r.seen(&m, 1<<1)
			return r.str(j, &t.Name)
		case "description":
			r.seen(&m, 1<<2)
			return r.str(j, &t.Description)
		case "parameters":
			r.seen(&m, 1<<3)
			return r.raw(j, &t.Parameters)
		case "strict":
			r.seen(&m, 1<<4)
			return r.boolPtr(j, &t.Strict)
		case "format":
			r.seen(&m, 1<<5)
			return r.raw(j, &t.Format)
		case "tools":
			r.seen(&m, 1<<6)
			if r.isNull(j) {
				t.Tools = nil
				return j + len("null")
			}
			t.Tools = []ResponsesTool{}
			return r.array(j, func(j int) int {
				t.Tools = append(t.Tools, ResponsesTool{})
				return r.responsesTool(j, &t.Tools[len(t.Tools)-1])
			})
		}
		return r.unknown(j, k, "type", "name", "description", "parameters", "strict", "format", "tools")
	})
}

func (r *fastReader) item(i int, it *responsesItem) int {
	var m uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.seen(&m, 1<<0)
			return r.str(j, &it.Type)
		case "id":
			r.seen(&m, 1<<1)
			return r.str(j, &it.ID)
		case "role":
			r.seen(&m, 1<<2)
			return r.str(j, &it.Role)
		case "content":
			r.seen(&m, 1<<3)
			return r.content(j, &it.Content.itemContent)
		case "call_id":
			r.seen(&m, 1<<4)
			return r.str(j, &it.CallID)
		case "name":
			r.seen(&m, 1<<5)
			return r.str(j, &it.Name)
		case "namespace":
			r.seen(&m, 1<<6)
			return r.str(j, &it.Namespace)
		case "arguments":
			r.seen(&m, 1<<7)
			return r.raw(j, &it.Arguments)
		case "input":
			r.seen(&m, 1<<8)
			return r.str(j, &it.Input)
		case "output":
			r.seen(&m, 1<<9)
			return r.content(j, &it.Output.itemContent)
		case "summary":
			r.seen(&m, 1<<10)
			if r.isNull(j) {
				it.Summary = nil
				return j + len("null")
			}
			it.Summary = []responsesSummaryPart{}
			return r.array(j, func(j int) int {
				it.Summary = append(it.Summary, responsesSummaryPart{})
				p := &it.Summary[len(it.Summary)-1]
				var pm uint32
				return r.object(j, func(k []byte, j int) int {
					switch string(k) {
					case "type":
						r.seen(&pm, 1)
						return r.str(j, &p.Type)
					case "text":
						r.seen(&pm, 2)
						return r.str(j, &p.Text)
					}
					return r.unknown(j, k, "type", "text")
				})
			})
		case "encrypted_content":
			r.seen(&m, 1<<11)
			return r.strPtr(j, &it.EncryptedContent)
		}
		return r.unknown(j, k, "type", "id", "role", "content", "call_id", "name", "namespace", "arguments",
			"input", "output", "summary", "encrypted_content")
	})
}

// content reads a string or a list of parts; anything else is left to
// the json.Unmarshal path, which words the error.
func (r *fastReader) content(i int, c *itemContent) int {
	switch r.b[i] {
	case 'n':
		*c = itemContent{}
		return i + len("null")
	case '"':
		c.set, c.parts = true, nil
		return r.str(i, &c.text)
	case '[':
		c.set, c.text = true, ""
		c.parts = []responsesPart{}
		return r.array(i, func(j int) int {
			c.parts = append(c.parts, responsesPart{})
			return r.part(j, &c.parts[len(c.parts)-1])
		})
	}
	return r.fail()
}

func (r *fastReader) part(i int, p *responsesPart) int {
	var m uint32
	return r.object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.seen(&m, 1<<0)
			return r.str(j, &p.Type)
		case "text":
			r.seen(&m, 1<<1)
			return r.str(j, &p.Text)
		case "refusal":
			r.seen(&m, 1<<2)
			return r.str(j, &p.Refusal)
		case "image_url":
			r.seen(&m, 1<<3)
			return r.str(j, &p.ImageURL)
		case "file_id":
			r.seen(&m, 1<<4)
			return r.str(j, &p.FileID)
		case "detail":
			r.seen(&m, 1<<5)
			return r.str(j, &p.Detail)
		case "file_data":
			r.seen(&m, 1<<6)
			return r.str(j, &p.FileData)
		case "filename":
			r.seen(&m, 1<<7)
			return r.str(j, &p.Filename)
		case "file_url":
			r.seen(&m, 1<<8)
			return r.str(j, &p.FileURL)
		}
		return r.unknown(j, k, "type", "text", "refusal", "image_url", "file_id", "detail", "file_data", "filename", "file_url")
	})
}

// decodeItem reads one item the slow way, naming the field at fault.
func decodeItem(raw []byte, param string) (responsesItem, error) {
	var it responsesItem
	if err := json.Unmarshal(raw, &it); err != nil {
		if ce, ok := asContentError(err); ok {
			return it, responsesError(param+"."+ce.field, "%s.%s must be a string or a list of content parts", param, ce.field)
		}
		return it, fieldError(param, err)
	}
	return it, nil
}

func asContentError(err error) (itemContentError, bool) {
	ce, ok := err.(itemContentError)
	return ce, ok
}

// paramOf is the error parameter of input item i.
func paramOf(i int) string { return "input[" + strconv.Itoa(i) + "]" }
