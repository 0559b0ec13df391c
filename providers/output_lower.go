package providers

import (
	"encoding/json"
	"errors"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// WithOutputLimit is the request with its output bound lowered to n tokens
// per choice: the body with the bound its client format uses set to n
// (chat's max_tokens and max_completion_tokens, whichever it sent, else
// insert; Messages' max_tokens; Responses' max_output_tokens; Gemini's
// generationConfig.maxOutputTokens; Converse's inferenceConfig.maxTokens),
// and the parsed turn set alike, so that every route sends the upstream
// n: same-format pass-through sends the body, translations read the turn
// or the body. insert names the member a chat or Messages body without a
// bound gets. Budgets lower a request's bound when its worst case does not
// fit what is left of them. A request whose format has no bound to set
// (embeddings) is ErrNoOutputBound: the caller must not say it bounded it.
func (info RequestInfo) WithOutputLimit(body []byte, n int64, insert string) ([]byte, RequestInfo, error) {
	n = max(n, 1)
	switch t := info.Turn.(type) {
	case nil:
		out, found, err := setMembers(body, 0, n, "max_tokens", "max_completion_tokens")
		if err == nil && !found {
			out, err = insertMember(body, 0, insert, n)
		}
		if err == nil {
			out, err = fitThinking(out, n)
		}
		if err != nil {
			return nil, info, err
		}
		info.maxTokens = n
		return out, info, nil
	case *ResponsesTurn:
		out, found, err := setMembers(body, 0, n, "max_output_tokens")
		if err == nil && !found {
			out, err = insertMember(body, 0, "max_output_tokens", n)
		}
		if err != nil {
			return nil, info, err
		}
		t.Req.MaxOutputTokens = &n
		return out, info, nil
	case *GeminiTurn:
		out, err := setNestedBound(body, n, geminiConfigNames, geminiBoundNames)
		if err != nil {
			return nil, info, err
		}
		if t.req.GenerationConfig == nil {
			t.req.GenerationConfig = &geminiGenConfig{}
		}
		t.req.GenerationConfig.MaxOutputTokens = &n
		return out, info, nil
	case *ConverseTurn:
		// Every route of a Converse client translates the turn (toChat);
		// the body is set too so that it says what was sent.
		out, err := setNestedBound(body, n, []string{"inferenceConfig"}, []string{"maxTokens"})
		if err != nil {
			return nil, info, err
		}
		if t.req.InferenceConfig == nil {
			t.req.InferenceConfig = &converseInference{}
		}
		t.req.InferenceConfig.MaxTokens = &n
		return out, info, nil
	}
	return nil, info, ErrNoOutputBound
}

// ErrNoOutputBound is WithOutputLimit's answer for a request whose format
// has no output bound the gateway can set (embeddings produce no output).
var ErrNoOutputBound = errors.New("this request format has no output bound the gateway can set")

// geminiConfigNames and geminiBoundNames are the spellings Google's
// proto-JSON parser reads for generationConfig and its maxOutputTokens:
// the JSON name and the proto field name.
var (
	geminiConfigNames = []string{"generationConfig", "generation_config"}
	geminiBoundNames  = []string{"maxOutputTokens", "max_output_tokens"}
)

// setNestedBound sets the bound members (any spelling in names) of every
// top-level config object (any spelling in configs) to n, inserting
// names[0] into one that has none, replacing a null config with one that
// holds the bound, and inserting configs[0] when there is none: whichever
// copy an upstream's parser reads, it reads n.
func setNestedBound(body []byte, n int64, configs, names []string) ([]byte, error) {
	var spans [4]jsonfast.Span
	found := spans[:0]
	_, err := jsonfast.EachMember(body, 0, func(k []byte, v jsonfast.Span) {
		for _, c := range configs {
			if jsonfast.KeyIs(k, c) {
				found = append(found, v)
				return
			}
		}
	})
	if err != nil {
		return nil, errNotObject
	}
	repl := jsonfast.AppendJSONString([]byte{'{'}, names[0])
	repl = append(jsonfast.AppendInt(append(repl, ':'), n), '}')
	if len(found) == 0 {
		return insertRaw(body, 0, configs[0], repl)
	}
	// Last first: a change leaves the spans before it where they were.
	for i := len(found) - 1; i >= 0; i-- {
		g := found[i]
		switch {
		case g.IsNull(body):
			body = jsonfast.Splice(body, g, repl)
		case body[g.Start] != '{':
			return nil, BadRequest(configs[0], configs[0]+" must be an object")
		default:
			out, ok, err := setMembers(body, g.Start, n, names...)
			if err == nil && !ok {
				out, err = insertMember(body, g.Start, names[0], n)
			}
			if err != nil {
				return nil, err
			}
			body = out
		}
	}
	return body, nil
}

var errNotObject = errors.New("request body is not a json object")

// setMembers sets every member named one of names of the object at obj to
// n, and reports whether there was one.
func setMembers(body []byte, obj int, n int64, names ...string) ([]byte, bool, error) {
	var spans [4]jsonfast.Span
	found := spans[:0]
	_, err := jsonfast.EachMember(body, obj, func(k []byte, v jsonfast.Span) {
		for _, name := range names {
			if jsonfast.KeyIs(k, name) {
				found = append(found, v)
			}
		}
	})
	if err != nil {
		return nil, false, errNotObject
	}
	if len(found) == 0 {
		return body, false, nil
	}
	num := jsonfast.AppendInt(nil, n)
	out := make([]byte, 0, len(body)+len(found)*len(num))
	prev := 0
	for _, v := range found {
		out = append(out, body[prev:v.Start]...)
		out = append(out, num...)
		prev = v.End
	}
	return append(out, body[prev:]...), true, nil
}

// insertMember adds "name":n first in the object at obj.
func insertMember(body []byte, obj int, name string, n int64) ([]byte, error) {
	return insertRaw(body, obj, name, jsonfast.AppendInt(nil, n))
}

func insertRaw(body []byte, obj int, name string, value []byte) ([]byte, error) {
	open := jsonfast.SkipSpace(body, obj)
	if open >= len(body) || body[open] != '{' {
		return nil, errNotObject
	}
	ins := jsonfast.AppendJSONString(nil, name)
	ins = append(ins, ':')
	ins = append(ins, value...)
	if next := jsonfast.SkipSpace(body, open+1); next < len(body) && body[next] != '}' {
		ins = append(ins, ',')
	}
	return jsonfast.Splice(body, jsonfast.Span{Start: open + 1, End: open + 1}, ins), nil
}

// minThinkingBudget is the smallest thinking budget_tokens Anthropic takes.
const minThinkingBudget = 1024

// fitThinking keeps a Messages request's thinking budget below its
// lowered max_tokens: Anthropic refuses budget_tokens >= max_tokens with a
// 400, which would turn a budget's shorter answer (Claude Code sends a
// thinking budget) into no answer. The budget becomes n-1, or thinking is
// turned off when that is under Anthropic's minimum. Only the last
// "thinking" member counts, as decoders keep the last of duplicates.
func fitThinking(body []byte, n int64) ([]byte, error) {
	th, ok, err := jsonfast.FindMember(body, 0, "thinking")
	if err != nil {
		return nil, errNotObject
	}
	if !ok || body[th.Start] != '{' {
		return body, nil
	}
	var t struct {
		Type   string `json:"type"`
		Budget int64  `json:"budget_tokens"`
	}
	if json.Unmarshal(body[th.Start:th.End], &t) != nil || t.Type != "enabled" || t.Budget < n {
		return body, nil
	}
	if n-1 >= minThinkingBudget {
		out, _, err := setMembers(body, th.Start, n-1, "budget_tokens")
		return out, err
	}
	return jsonfast.Splice(body, th, []byte(`{"type":"disabled"}`)), nil
}
