package providers

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
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
// (after one json.Valid) with jsonfast.Reader: every field the gateway
// uses, every input item and its content parts. Anything it does not
// handle exactly as encoding/json would (a duplicate or case-folded key, a
// wrong type) sends the caller to the json.Unmarshal path, whose results
// and errors it must equal (FuzzResponsesRequest).
func readResponsesRequest(body []byte, t *ResponsesTurn) bool {
	r := jsonfast.NewReader(body)
	q := &t.Req
	var mask uint64
	seen := func(bit uint) {
		if mask&(1<<bit) != 0 {
			r.Fail()
		}
		mask |= 1 << bit
	}
	r.Object(jsonfast.SkipSpace(body, 0), func(k []byte, i int) int {
		switch string(k) {
		case "model":
			seen(0)
			return r.Str(i, &q.Model)
		case "input":
			seen(1)
			end := r.Raw(i, &q.Input)
			if r.OK() && body[i] == '[' {
				// Counting the items first (a skip over the array) sizes
				// both lists once instead of growing them item by item.
				n := 0
				r.Array(i, func(j int) int {
					n++
					return r.Skip(j)
				})
				if n > 0 && r.OK() {
					t.Items, t.items = make([]json.RawMessage, 0, n), make([]responsesItem, 0, n)
				}
				r.Array(i, func(j int) int {
					var it responsesItem
					e := readResponsesItem(&r, j, &it)
					if r.OK() {
						t.Items = append(t.Items, body[j:e:e])
						t.items = append(t.items, it)
					}
					return e
				})
			}
			return end
		case "instructions":
			seen(2)
			return r.StrPtr(i, &q.Instructions)
		case "tools":
			seen(3)
			return readResponsesTools(&r, i, &q.Tools)
		case "tool_choice":
			seen(4)
			return r.Raw(i, &q.ToolChoice)
		case "parallel_tool_calls":
			seen(5)
			return r.BoolPtr(i, &q.ParallelToolCalls)
		case "stream":
			seen(6)
			return r.Bool(i, &q.Stream)
		case "store":
			seen(7)
			return r.BoolPtr(i, &q.Store)
		case "previous_response_id":
			seen(8)
			return r.StrPtr(i, &q.PreviousResponseID)
		case "conversation":
			seen(9)
			return r.Raw(i, &q.Conversation)
		case "max_output_tokens":
			seen(10)
			return r.IntPtr(i, &q.MaxOutputTokens)
		case "temperature":
			seen(11)
			return r.FloatPtr(i, &q.Temperature)
		case "top_p":
			seen(12)
			return r.FloatPtr(i, &q.TopP)
		case "text":
			seen(13)
			if r.IsNull(i) {
				q.Text = nil
				return i + len("null")
			}
			q.Text = &ResponsesText{}
			var m uint32
			return r.Object(i, func(k []byte, j int) int {
				switch string(k) {
				case "format":
					r.Seen(&m, 1)
					return r.Raw(j, &q.Text.Format)
				case "verbosity":
					r.Seen(&m, 2)
					return r.Str(j, &q.Text.Verbosity)
				}
				return r.Unknown(j, k, "format", "verbosity")
			})
		case "reasoning":
			seen(14)
			if r.IsNull(i) {
				q.Reasoning = nil
				return i + len("null")
			}
			q.Reasoning = &ResponsesReasoning{}
			var m uint32
			return r.Object(i, func(k []byte, j int) int {
				switch string(k) {
				case "effort":
					r.Seen(&m, 1)
					return r.StrPtr(j, &q.Reasoning.Effort)
				case "summary":
					r.Seen(&m, 2)
					return r.StrPtr(j, &q.Reasoning.Summary)
				}
				return r.Unknown(j, k, "effort", "summary")
			})
		case "include":
			seen(15)
			if r.IsNull(i) {
				q.Include = nil
				return i + len("null")
			}
			q.Include = []string{}
			return r.Array(i, func(j int) int {
				q.Include = append(q.Include, "")
				return r.Str(j, &q.Include[len(q.Include)-1])
			})
		case "metadata":
			seen(16)
			if r.IsNull(i) {
				q.Metadata = nil
				return i + len("null")
			}
			q.Metadata = map[string]string{}
			return r.Object(i, func(k []byte, j int) int {
				var v string
				end := r.Str(j, &v)
				if r.IsNull(j) {
					// json.Unmarshal stores "" for a null map value.
					v = ""
				}
				q.Metadata[string(k)] = v
				return end
			})
		case "prompt_cache_key":
			seen(17)
			return r.StrPtr(i, &q.PromptCacheKey)
		case "safety_identifier":
			seen(18)
			return r.StrPtr(i, &q.SafetyIdentifier)
		case "user":
			seen(19)
			return r.StrPtr(i, &q.User)
		case "truncation":
			seen(20)
			return r.StrPtr(i, &q.Truncation)
		case "service_tier":
			seen(21)
			return r.StrPtr(i, &q.ServiceTier)
		case "background":
			seen(22)
			return r.BoolPtr(i, &q.Background)
		case "max_tool_calls":
			seen(23)
			return r.IntPtr(i, &q.MaxToolCalls)
		case "top_logprobs":
			seen(24)
			return r.IntPtr(i, &q.TopLogprobs)
		}
		return r.Unknown(i, k, "model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
			"stream", "store", "previous_response_id", "conversation", "max_output_tokens", "temperature", "top_p",
			"text", "reasoning", "include", "metadata", "prompt_cache_key", "safety_identifier", "user",
			"truncation", "service_tier", "background", "max_tool_calls", "top_logprobs")
	})
	return r.OK()
}

// readResponsesTools reads a list of tools (a request's, a namespace's, a
// tool search output's), null as nil.
func readResponsesTools(r *jsonfast.Reader, i int, dst *[]ResponsesTool) int {
	if r.IsNull(i) {
		*dst = nil
		return i + len("null")
	}
	*dst = []ResponsesTool{}
	return r.Array(i, func(j int) int {
		*dst = append(*dst, ResponsesTool{})
		return readResponsesTool(r, j, &(*dst)[len(*dst)-1])
	})
}

func readResponsesTool(r *jsonfast.Reader, i int, t *ResponsesTool) int {
	var m uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.Seen(&m, 1<<0)
			return r.Str(j, &t.Type)
		case "name":
			r.Seen(&m, 1<<1)
			return r.Str(j, &t.Name)
		case "description":
			r.Seen(&m, 1<<2)
			return r.Str(j, &t.Description)
		case "parameters":
			r.Seen(&m, 1<<3)
			return r.Raw(j, &t.Parameters)
		case "strict":
			r.Seen(&m, 1<<4)
			return r.BoolPtr(j, &t.Strict)
		case "format":
			r.Seen(&m, 1<<5)
			return r.Raw(j, &t.Format)
		case "tools":
			r.Seen(&m, 1<<6)
			return readResponsesTools(r, j, &t.Tools)
		case "execution":
			r.Seen(&m, 1<<7)
			return r.Str(j, &t.Execution)
		}
		return r.Unknown(j, k, "type", "name", "description", "parameters", "strict", "format", "tools", "execution")
	})
}

func readResponsesItem(r *jsonfast.Reader, i int, it *responsesItem) int {
	var m uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.Seen(&m, 1<<0)
			return r.Str(j, &it.Type)
		case "id":
			r.Seen(&m, 1<<1)
			return r.Str(j, &it.ID)
		case "role":
			r.Seen(&m, 1<<2)
			return r.Str(j, &it.Role)
		case "content":
			r.Seen(&m, 1<<3)
			return readItemContent(r, j, &it.Content.itemContent)
		case "call_id":
			r.Seen(&m, 1<<4)
			return r.Str(j, &it.CallID)
		case "name":
			r.Seen(&m, 1<<5)
			return r.Str(j, &it.Name)
		case "namespace":
			r.Seen(&m, 1<<6)
			return r.Str(j, &it.Namespace)
		case "arguments":
			r.Seen(&m, 1<<7)
			return r.Raw(j, &it.Arguments)
		case "input":
			r.Seen(&m, 1<<8)
			return r.Str(j, &it.Input)
		case "output":
			r.Seen(&m, 1<<9)
			return readItemContent(r, j, &it.Output.itemContent)
		case "tools": // a tool_search_output's
			r.Seen(&m, 1<<13)
			return readResponsesTools(r, j, &it.Tools)
		case "execution": // a tool search's
			r.Seen(&m, 1<<12)
			return r.Str(j, &it.Execution)
		case "summary":
			r.Seen(&m, 1<<10)
			if r.IsNull(j) {
				it.Summary = nil
				return j + len("null")
			}
			it.Summary = []responsesSummaryPart{}
			return r.Array(j, func(j int) int {
				it.Summary = append(it.Summary, responsesSummaryPart{})
				p := &it.Summary[len(it.Summary)-1]
				var pm uint32
				return r.Object(j, func(k []byte, j int) int {
					switch string(k) {
					case "type":
						r.Seen(&pm, 1)
						return r.Str(j, &p.Type)
					case "text":
						r.Seen(&pm, 2)
						return r.Str(j, &p.Text)
					}
					return r.Unknown(j, k, "type", "text")
				})
			})
		case "encrypted_content":
			r.Seen(&m, 1<<11)
			return r.StrPtr(j, &it.EncryptedContent)
		}
		return r.Unknown(j, k, "type", "id", "role", "content", "call_id", "name", "namespace", "arguments",
			"input", "output", "summary", "encrypted_content", "execution", "tools")
	})
}

// content reads a string or a list of parts; anything else is left to
// the json.Unmarshal path, which words the error.
func readItemContent(r *jsonfast.Reader, i int, c *itemContent) int {
	switch r.Bytes()[i] {
	case 'n':
		*c = itemContent{}
		return i + len("null")
	case '"':
		c.set, c.parts = true, nil
		return r.Str(i, &c.text)
	case '[':
		c.set, c.text = true, ""
		c.parts = []responsesPart{}
		return r.Array(i, func(j int) int {
			c.parts = append(c.parts, responsesPart{})
			return readResponsesPart(r, j, &c.parts[len(c.parts)-1])
		})
	}
	return r.Fail()
}

func readResponsesPart(r *jsonfast.Reader, i int, p *responsesPart) int {
	var m uint32
	return r.Object(i, func(k []byte, j int) int {
		switch string(k) {
		case "type":
			r.Seen(&m, 1<<0)
			return r.Str(j, &p.Type)
		case "text":
			r.Seen(&m, 1<<1)
			return r.Str(j, &p.Text)
		case "refusal":
			r.Seen(&m, 1<<2)
			return r.Str(j, &p.Refusal)
		case "image_url":
			r.Seen(&m, 1<<3)
			return r.Str(j, &p.ImageURL)
		case "file_id":
			r.Seen(&m, 1<<4)
			return r.Str(j, &p.FileID)
		case "detail":
			r.Seen(&m, 1<<5)
			return r.Str(j, &p.Detail)
		case "file_data":
			r.Seen(&m, 1<<6)
			return r.Str(j, &p.FileData)
		case "filename":
			r.Seen(&m, 1<<7)
			return r.Str(j, &p.Filename)
		case "file_url":
			r.Seen(&m, 1<<8)
			return r.Str(j, &p.FileURL)
		}
		return r.Unknown(j, k, "type", "text", "refusal", "image_url", "file_id", "detail", "file_data", "filename", "file_url")
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

// paramOf is the error parameter of input item i. The translation names
// every item's before it knows whether an error needs it; the first ten
// are cut from one constant, so a short conversation costs no allocation.
func paramOf(i int) string {
	const first = "input[0]input[1]input[2]input[3]input[4]input[5]input[6]input[7]input[8]input[9]"
	if i >= 0 && i < 10 {
		return first[i*8 : i*8+8]
	}
	return "input[" + strconv.Itoa(i) + "]"
}
