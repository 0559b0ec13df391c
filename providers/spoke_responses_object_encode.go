package providers

import (
	"encoding/json"
	"slices"
)

// appendResponseObject writes the Response exactly as json.Marshal would
// (FuzzResponseObjectEncoder pins it), without reflection: it is written
// up to three times per request (created, in_progress, the end).
func appendResponseObject(dst []byte, o *responseObject) []byte {
	dst = appendStringMember(append(dst, '{'), "id", o.ID, true)
	dst = appendStringMember(dst, "object", o.Object, false)
	dst = appendInt(appendKey(dst, "created_at", false), o.CreatedAt)
	dst = appendOptInt(appendKey(dst, "completed_at", false), o.CompletedAt)
	dst = appendStringMember(dst, "status", o.Status, false)
	dst = appendBool(appendKey(dst, "background", false), o.Background)
	dst = appendKey(dst, "error", false)
	if e := o.Error; e != nil {
		dst = appendStringMember(append(dst, '{'), "code", e.Code, true)
		dst = append(appendStringMember(dst, "message", e.Message, false), '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = appendKey(dst, "incomplete_details", false)
	if d := o.IncompleteDetails; d != nil {
		dst = append(appendStringMember(append(dst, '{'), "reason", d.Reason, true), '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = appendOptString(appendKey(dst, "instructions", false), o.Instructions)
	dst = appendOptInt(appendKey(dst, "max_output_tokens", false), o.MaxOutputTokens)
	dst = appendOptInt(appendKey(dst, "max_tool_calls", false), o.MaxToolCalls)
	dst = appendStringMember(dst, "model", o.Model, false)
	dst = appendRawList(appendKey(dst, "output", false), o.Output)
	dst = appendBool(appendKey(dst, "parallel_tool_calls", false), o.ParallelToolCalls)
	dst = appendOptString(appendKey(dst, "previous_response_id", false), o.PreviousResponseID)
	dst = appendOptString(appendKey(dst, "prompt_cache_key", false), o.PromptCacheKey)
	dst = appendOptString(appendKey(append(appendKey(dst, "reasoning", false), '{'), "effort", true), o.Reasoning.Effort)
	dst = append(appendOptString(appendKey(dst, "summary", false), o.Reasoning.Summary), '}')
	dst = appendOptString(appendKey(dst, "safety_identifier", false), o.SafetyIdentifier)
	dst = appendStringMember(dst, "service_tier", o.ServiceTier, false)
	dst = appendBool(appendKey(dst, "store", false), o.Store)
	dst = appendMarshalFloat(appendKey(dst, "temperature", false), o.Temperature)
	dst = appendRawOrNull(appendKey(append(appendKey(dst, "text", false), '{'), "format", true), o.Text.Format)
	dst = append(appendStringMember(dst, "verbosity", o.Text.Verbosity, false), '}')
	dst = appendRawOrNull(appendKey(dst, "tool_choice", false), o.ToolChoice)
	dst = appendKey(dst, "tools", false)
	if o.Tools == nil {
		dst = append(dst, "null"...)
	} else {
		dst = appendResponsesTools(dst, o.Tools)
	}
	dst = appendMarshalFloat(appendKey(dst, "top_p", false), o.TopP)
	dst = appendStringMember(dst, "truncation", o.Truncation, false)
	dst = appendKey(dst, "usage", false)
	if u := o.Usage; u != nil {
		dst = appendInt(appendKey(append(dst, '{'), "input_tokens", true), u.InputTokens)
		dst = append(appendInt(appendKey(append(appendKey(dst, "input_tokens_details", false), '{'), "cached_tokens", true), u.InputTokensDetails.CachedTokens), '}')
		dst = appendInt(appendKey(dst, "output_tokens", false), u.OutputTokens)
		dst = append(appendInt(appendKey(append(appendKey(dst, "output_tokens_details", false), '{'), "reasoning_tokens", true), u.OutputTokensDetails.ReasoningTokens), '}')
		dst = append(appendInt(appendKey(dst, "total_tokens", false), u.TotalTokens), '}')
	} else {
		dst = append(dst, "null"...)
	}
	dst = appendOptString(appendKey(dst, "user", false), o.User)
	dst = appendKey(dst, "metadata", false)
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
			dst = appendMarshalString(append(appendMarshalString(dst, k), ':'), o.Metadata[k])
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
		dst = appendStringMember(append(dst, '{'), "type", t.Type, true)
		if t.Name != "" {
			dst = appendStringMember(dst, "name", t.Name, false)
		}
		if t.Description != "" {
			dst = appendStringMember(dst, "description", t.Description, false)
		}
		if len(t.Parameters) > 0 {
			dst = appendCompactRaw(appendKey(dst, "parameters", false), t.Parameters)
		}
		if t.Strict != nil {
			dst = appendBool(appendKey(dst, "strict", false), *t.Strict)
		}
		if len(t.Format) > 0 {
			dst = appendCompactRaw(appendKey(dst, "format", false), t.Format)
		}
		if len(t.Tools) > 0 {
			dst = appendResponsesTools(appendKey(dst, "tools", false), t.Tools)
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
		dst = appendRawOrNull(dst, raw)
	}
	return append(dst, ']')
}

func appendOptInt(dst []byte, n *int64) []byte {
	if n == nil {
		return append(dst, "null"...)
	}
	return appendInt(dst, *n)
}

func appendBool(dst []byte, b bool) []byte {
	if b {
		return append(dst, "true"...)
	}
	return append(dst, "false"...)
}
