package providers

import (
	"errors"

	"github.com/modelgate/modelgate/providers/internal/jsonfast"
)

// WithOutputLimit is the request with its output bound lowered to n tokens
// per choice: the body with the bound its client format uses set to n
// (chat's max_tokens and max_completion_tokens, whichever it sent, else
// insert; Messages' max_tokens; Responses' max_output_tokens; Gemini's
// generationConfig.maxOutputTokens), and the parsed turn set alike, so
// that every route sends the upstream n: same-format pass-through sends
// the body, translations read the turn or the body. insert names the
// member a chat or Messages body without a bound gets. Budgets lower a
// request's bound when its worst case does not fit what is left of them.
func (info RequestInfo) WithOutputLimit(body []byte, n int64, insert string) ([]byte, RequestInfo, error) {
	n = max(n, 1)
	switch t := info.Turn.(type) {
	case nil:
		out, found, err := setMembers(body, 0, n, "max_tokens", "max_completion_tokens")
		if err == nil && !found {
			out, err = insertMember(body, 0, insert, n)
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
		out, err := t.limitOutput(body, n)
		return out, info, err
	}
	return body, info, nil // no output to bound (embeddings)
}

func (t *GeminiTurn) limitOutput(body []byte, n int64) ([]byte, error) {
	g, ok, err := jsonfast.FindMember(body, 0, "generationConfig")
	if err != nil {
		return nil, errNotObject
	}
	var out []byte
	switch {
	case !ok || g.IsNull(body):
		repl := jsonfast.AppendInt([]byte(`{"maxOutputTokens":`), n)
		repl = append(repl, '}')
		if ok {
			out = jsonfast.Splice(body, g, repl)
		} else {
			out, err = insertRaw(body, 0, "generationConfig", repl)
		}
	case body[g.Start] != '{':
		return nil, BadRequest("generationConfig", "generationConfig must be an object")
	default:
		var found bool
		out, found, err = setMembers(body, g.Start, n, "maxOutputTokens")
		if err == nil && !found {
			out, err = insertMember(body, g.Start, "maxOutputTokens", n)
		}
	}
	if err != nil {
		return nil, err
	}
	if t.req.GenerationConfig == nil {
		t.req.GenerationConfig = &geminiGenConfig{}
	}
	t.req.GenerationConfig.MaxOutputTokens = &n
	return out, nil
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
