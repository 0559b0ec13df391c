package providers

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// RewriteModel replaces the value of the top-level "model" member with
// model by splicing bytes; the rest of the body is copied untouched. Every
// top-level "model" member is rewritten so no duplicate can reach a
// decoder that keeps the first one.
func RewriteModel(body []byte, model string) ([]byte, error) {
	var spans [2]jsonfast.Span
	found := spans[:0]
	notString := false
	_, err := jsonfast.EachMember(body, 0, func(k []byte, v jsonfast.Span) {
		if jsonfast.KeyIs(k, "model") {
			if body[v.Start] != '"' {
				notString = true
			}
			found = append(found, v)
		}
	})
	if err != nil {
		return nil, errors.New("request body is not a json object")
	}
	if len(found) == 0 {
		return nil, errors.New("request has no model")
	}
	if notString {
		return nil, errors.New("request model is not a string")
	}
	size := len(body) + len(model) + 2
	out := make([]byte, 0, size)
	prev := 0
	for _, v := range found {
		out = append(out, body[prev:v.Start]...)
		out = jsonfast.AppendJSONString(out, model)
		prev = v.End
	}
	return append(out, body[prev:]...), nil
}

// invalidJSON names where the body stops being JSON; it runs only on the
// error path, so the hot path keeps the cheaper json.Valid.
func invalidJSON(body []byte) *APIError {
	var v any
	err := json.Unmarshal(body, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return BadRequest("", fmt.Sprintf("request body is not valid JSON: %v (at byte %d)", se, se.Offset))
	}
	return BadRequest("", "request body is not valid JSON")
}

const includeUsageMember = `"include_usage":true`

// EnsureIncludeUsage makes stream_options.include_usage true in an OpenAI
// request, editing only the bytes that change, and reports whether it had
// to (so the gateway knows to hide the usage chunk from the client).
func EnsureIncludeUsage(body []byte) (out []byte, added bool, err error) {
	opts, hasOpts, err := jsonfast.FindMember(body, 0, "stream_options")
	if err != nil {
		return nil, false, errors.New("request body is not a json object")
	}
	if !hasOpts || body[opts.Start] != '{' {
		if hasOpts {
			// null or a wrong type: replace the value outright
			return jsonfast.Splice(body, opts, []byte(`{`+includeUsageMember+`}`)), true, nil
		}
		open := jsonfast.SkipSpace(body, 0) // EachMember checked it is '{'
		ins := []byte(`"stream_options":{` + includeUsageMember + `}`)
		if next := jsonfast.SkipSpace(body, open+1); body[next] != '}' {
			ins = append(ins, ',')
		}
		return jsonfast.Splice(body, jsonfast.Span{Start: open + 1, End: open + 1}, ins), true, nil
	}
	iu, ok, err := jsonfast.FindMember(body, opts.Start, "include_usage")
	if err != nil {
		return nil, false, errors.New("stream_options is not a json object")
	}
	if ok {
		if string(body[iu.Start:iu.End]) == "true" {
			return body, false, nil
		}
		return jsonfast.Splice(body, iu, []byte("true")), true, nil
	}
	ins := []byte(includeUsageMember)
	if next := jsonfast.SkipSpace(body, opts.Start+1); body[next] != '}' {
		ins = append(ins, ',')
	}
	return jsonfast.Splice(body, jsonfast.Span{Start: opts.Start + 1, End: opts.Start + 1}, ins), true, nil
}
