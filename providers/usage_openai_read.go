package providers

import (
	"strconv"

	"github.com/modelgate/modelgate/providers/internal/jsonfast"
)

// readOpenAIUsage fills out from u, an OpenAI usage object already known
// to be valid JSON, as json.Unmarshal would, without reflection: the
// usage read was a tenth of the pass-through handler's CPU. It reports
// false, leaving out partly filled, on anything it does not read
// identically (a key needing case or Unicode folding, a number that is
// not a plain integer, a null count), and the caller then decodes with
// encoding/json; FuzzOpenAIUsageFromBody holds the two equal.
func readOpenAIUsage(u []byte, out *OpenAIUsage) bool {
	ok := true
	_, err := jsonfast.EachMember(u, 0, func(key []byte, v jsonfast.Span) {
		if !ok {
			return
		}
		name, plain := plainKey(key)
		if !plain {
			ok = false
			return
		}
		val := u[v.Start:v.End]
		switch string(name) {
		case "prompt_tokens":
			ok = readPlainInt(val, &out.PromptTokens)
		case "completion_tokens":
			ok = readPlainInt(val, &out.CompletionTokens)
		case "total_tokens":
			ok = readPlainInt(val, &out.TotalTokens)
		case "prompt_tokens_details":
			ok = readPromptDetails(val, &out.PromptTokensDetails)
		}
	})
	return ok && err == nil
}

// readPromptDetails reads prompt_tokens_details into *d as json.Unmarshal
// does for a pointer: null clears it, and an object fills the struct
// already there (a duplicate key merges into the first).
func readPromptDetails(val []byte, d **OpenAIPromptTokenDetails) bool {
	if string(val) == "null" {
		*d = nil
		return true
	}
	if val[0] != '{' {
		return false
	}
	if *d == nil {
		*d = &OpenAIPromptTokenDetails{}
	}
	ok := true
	_, err := jsonfast.EachMember(val, 0, func(key []byte, v jsonfast.Span) {
		if !ok {
			return
		}
		name, plain := plainKey(key)
		switch {
		case !plain:
			ok = false
		case string(name) == "cached_tokens":
			ok = readPlainInt(val[v.Start:v.End], &(*d).CachedTokens)
		case string(name) == "cache_write_tokens":
			ok = readPlainInt(val[v.Start:v.End], &(*d).CacheWriteTokens)
		}
	})
	return ok && err == nil
}

// plainKey returns a key token's name when it is lower-case ASCII without
// escapes: only such a key matches a field exactly and nothing else, so
// the fast read needs no folding.
func plainKey(tok []byte) ([]byte, bool) {
	inner := tok[1 : len(tok)-1]
	for _, c := range inner {
		if c == '\\' || c >= 0x80 || ('A' <= c && c <= 'Z') {
			return nil, false
		}
	}
	return inner, true
}

// readPlainInt sets *n from an integer token that fits an int64.
func readPlainInt(tok []byte, n *int64) bool {
	if len(tok) == 0 || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9')) {
		return false
	}
	for _, c := range tok[1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	v, err := strconv.ParseInt(string(tok), 10, 64)
	if err != nil {
		return false
	}
	*n = v
	return true
}
