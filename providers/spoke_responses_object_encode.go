package providers

import (
	"encoding/json"
	"slices"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// appendResponseObject writes the Response exactly as json.Marshal would
// (FuzzResponseObjectEncoder pins it), without reflection: it is written
// up to three times per request (created, in_progress, the end).
func appendResponseObject(dst []byte, o *responseObject) []byte {
	dst = jsonfast.AppendStringMember(append(dst, '{'), "id", o.ID, true)
	dst = jsonfast.AppendStringMember(dst, "object", o.Object, false)
	dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "created_at", false), o.CreatedAt)
	dst = appendOptInt(jsonfast.AppendKey(dst, "completed_at", false), o.CompletedAt)
	dst = jsonfast.AppendStringMember(dst, "status", o.Status, false)
	dst = jsonfast.AppendBool(jsonfast.AppendKey(dst, "background", false), o.Background)
	if c := o.Conversation; c != nil {
		dst = append(jsonfast.AppendStringMember(append(jsonfast.AppendKey(dst, "conversation", false), '{'), "id", c.ID, true), '}')
	}
	dst = jsonfast.AppendKey(dst, "error", false)
	if e := o.Error; e != nil {
		dst = jsonfast.AppendStringMember(append(dst, '{'), "code", e.Code, true)
		dst = append(jsonfast.AppendStringMember(dst, "message", e.Message, false), '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = jsonfast.AppendKey(dst, "incomplete_details", false)
	if d := o.IncompleteDetails; d != nil {
		dst = append(jsonfast.AppendStringMember(append(dst, '{'), "reason", d.Reason, true), '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = appendOptString(jsonfast.AppendKey(dst, "instructions", false), o.Instructions)
	dst = appendOptInt(jsonfast.AppendKey(dst, "max_output_tokens", false), o.MaxOutputTokens)
	dst = appendOptInt(jsonfast.AppendKey(dst, "max_tool_calls", false), o.MaxToolCalls)
	dst = jsonfast.AppendStringMember(dst, "model", o.Model, false)
	dst = appendRawList(jsonfast.AppendKey(dst, "output", false), o.Output)
	dst = jsonfast.AppendBool(jsonfast.AppendKey(dst, "parallel_tool_calls", false), o.ParallelToolCalls)
	dst = appendOptString(jsonfast.AppendKey(dst, "previous_response_id", false), o.PreviousResponseID)
	dst = appendOptString(jsonfast.AppendKey(dst, "prompt_cache_key", false), o.PromptCacheKey)
	dst = appendOptString(jsonfast.AppendKey(append(jsonfast.AppendKey(dst, "reasoning", false), '{'), "effort", true), o.Reasoning.Effort)
	dst = append(appendOptString(jsonfast.AppendKey(dst, "summary", false), o.Reasoning.Summary), '}')
	dst = appendOptString(jsonfast.AppendKey(dst, "safety_identifier", false), o.SafetyIdentifier)
	dst = jsonfast.AppendStringMember(dst, "service_tier", o.ServiceTier, false)
	dst = jsonfast.AppendBool(jsonfast.AppendKey(dst, "store", false), o.Store)
	dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "temperature", false), o.Temperature)
	dst = jsonfast.AppendRawOrNull(jsonfast.AppendKey(append(jsonfast.AppendKey(dst, "text", false), '{'), "format", true), o.Text.Format)
	dst = append(jsonfast.AppendStringMember(dst, "verbosity", o.Text.Verbosity, false), '}')
	dst = jsonfast.AppendRawOrNull(jsonfast.AppendKey(dst, "tool_choice", false), o.ToolChoice)
	dst = jsonfast.AppendKey(dst, "tools", false)
	if o.Tools == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendResponsesTools(dst, o.Tools)
	}
	dst = jsonfast.AppendMarshalFloat(jsonfast.AppendKey(dst, "top_p", false), o.TopP)
	dst = jsonfast.AppendStringMember(dst, "truncation", o.Truncation, false)
	dst = jsonfast.AppendKey(dst, "usage", false)
	if u := o.Usage; u != nil {
		dst = jsonfast.AppendInt(jsonfast.AppendKey(append(dst, '{'), "input_tokens", true), u.InputTokens)
		dst = append(jsonfast.AppendInt(jsonfast.AppendKey(append(jsonfast.AppendKey(dst, "input_tokens_details", false), '{'), "cached_tokens", true), u.InputTokensDetails.CachedTokens), '}')
		dst = jsonfast.AppendInt(jsonfast.AppendKey(dst, "output_tokens", false), u.OutputTokens)
		dst = append(jsonfast.AppendInt(jsonfast.AppendKey(append(jsonfast.AppendKey(dst, "output_tokens_details", false), '{'), "reasoning_tokens", true), u.OutputTokensDetails.ReasoningTokens), '}')
		dst = append(jsonfast.AppendInt(jsonfast.AppendKey(dst, "total_tokens", false), u.TotalTokens), '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = appendOptString(jsonfast.AppendKey(dst, "user", false), o.User)
	dst = jsonfast.AppendKey(dst, "metadata", false)
	if o.Metadata == nil {
		dst = append(dst, "null"...)
	} else {
		keys := make([]string, 0, len(o.Metadata))
		for k := range o.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = jsonfast.AppendMarshalString(append(jsonfast.AppendMarshalString(dst, k), ':'), o.Metadata[k])
		}
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

func appendResponsesTools(dst []byte, tools []ResponsesTool) []byte {
	dst = append(dst, '[')
	for i := range tools {
		t := &tools[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonfast.AppendStringMember(append(dst, '{'), "type", t.Type, true)
		if t.Name != "" {
			dst = jsonfast.AppendStringMember(dst, "name", t.Name, false)
		}
		if t.Description != "" {
			dst = jsonfast.AppendStringMember(dst, "description", t.Description, false)
		}
		if len(t.Parameters) > 0 {
			dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "parameters", false), t.Parameters)
		}
		if t.Strict != nil {
			dst = jsonfast.AppendBool(jsonfast.AppendKey(dst, "strict", false), *t.Strict)
		}
		if len(t.Format) > 0 {
			dst = jsonfast.AppendCompactRaw(jsonfast.AppendKey(dst, "format", false), t.Format)
		}
		if len(t.Tools) > 0 {
			dst = appendResponsesTools(jsonfast.AppendKey(dst, "tools", false), t.Tools)
		}
		dst = append(dst, '}')
	}
	return append(dst, ']')
}

func appendRawList(dst []byte, list []json.RawMessage) []byte {
	if list == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, raw := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonfast.AppendRawOrNull(dst, raw)
	}
	return append(dst, ']')
}

func appendOptInt(dst []byte, n *int64) []byte {
	if n == nil {
		return append(dst, "null"...)
	}
	return jsonfast.AppendInt(dst, *n)
}
