package providers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelgate/modelgate/providers/internal/jsonfast"
)

// A small JSON scanner for the pass-through paths: it finds a top-level
// member's value without decoding the rest of the body, so a 100 KB request
// costs one linear scan and one splice instead of a decode and re-encode.

var errScan = errors.New("malformed json")

// skipString returns the index just past the string starting at b[i] == '"'.
// Long strings (tool descriptions, file contents) dominate request bodies,
// so it jumps from quote to quote with IndexByte rather than walking bytes.
func skipString(b []byte, i int) (int, error) {
	open := i
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return 0, errScan
		}
		j += i
		n := 0
		for k := j - 1; k > open && b[k] == '\\'; k-- {
			n++
		}
		if n%2 == 0 {
			return j + 1, nil
		}
		i = j + 1
	}
}

// skipValue returns the index just past the value starting at b[i]. It
// checks nesting and string boundaries only; callers that need full
// validity run json.Valid first.
func skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, errScan
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				end, err := skipString(b, i)
				if err != nil {
					return 0, err
				}
				i = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
		}
		return 0, errScan
	}
	start := i
	for i < len(b) {
		switch c := b[i]; {
		case c == ',' || c == '}' || c == ']' || jsonfast.IsSpace(c):
			if i == start {
				return 0, errScan
			}
			return i, nil
		}
		i++
	}
	if i == start {
		return 0, errScan
	}
	return i, nil
}

// span is a value's byte range within its document.
type span struct{ start, end int }

// eachMember calls fn for every member of the object starting at b[i]
// with the raw key token (quotes included) and the value's span, and
// returns the index just past the object.
func eachMember(b []byte, i int, fn func(key []byte, v span)) (int, error) {
	i = jsonfast.SkipSpace(b, i)
	if i >= len(b) || b[i] != '{' {
		return 0, errScan
	}
	i = jsonfast.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errScan
		}
		kend, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		key := b[i:kend]
		i = jsonfast.SkipSpace(b, kend)
		if i >= len(b) || b[i] != ':' {
			return 0, errScan
		}
		i = jsonfast.SkipSpace(b, i+1)
		vend, err := skipValue(b, i)
		if err != nil {
			return 0, err
		}
		fn(key, span{i, vend})
		i = jsonfast.SkipSpace(b, vend)
		if i >= len(b) {
			return 0, errScan
		}
		if b[i] == '}' {
			return i + 1, nil
		}
		if b[i] != ',' {
			return 0, errScan
		}
		i = jsonfast.SkipSpace(b, i+1)
	}
}

// keyIs reports whether a raw key token names key the way encoding/json
// matches struct fields: case-insensitively, with Unicode folding. Go
// upstreams (Ollama among them) decode that way, so a "Model" member must
// count as the model or it could slip past RewriteModel.
func keyIs(tok []byte, key string) bool {
	if len(tok) < 2 {
		return false
	}
	inner := tok[1 : len(tok)-1]
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			s, ok := decodeStringToken(tok)
			return ok && strings.EqualFold(s, key)
		}
	}
	if len(inner) != len(key) {
		return false
	}
	for i, c := range inner {
		if c == key[i] {
			continue
		}
		if lc := c | 0x20; lc != key[i]|0x20 || lc < 'a' || lc > 'z' {
			return false
		}
	}
	return true
}

// findMember returns the span of the last member named key in the object
// at b[i] (the last, because encoding/json and most decoders keep the last
// of duplicate keys).
func findMember(b []byte, i int, key string) (span, bool, error) {
	var found span
	ok := false
	_, err := eachMember(b, i, func(k []byte, v span) {
		if keyIs(k, key) {
			found, ok = v, true
		}
	})
	if err != nil {
		return span{}, false, err
	}
	return found, ok, nil
}

// decodeStringToken returns the Go value of a JSON string token.
func decodeStringToken(tok []byte) (string, bool) {
	if !validStringToken(tok) {
		return "", false
	}
	return unquoteFast(tok), true
}

// RewriteModel replaces the value of the top-level "model" member with
// model by splicing bytes; the rest of the body is copied untouched. Every
// top-level "model" member is rewritten so no duplicate can reach a
// decoder that keeps the first one.
func RewriteModel(body []byte, model string) ([]byte, error) {
	var spans [2]span
	found := spans[:0]
	notString := false
	_, err := eachMember(body, 0, func(k []byte, v span) {
		if keyIs(k, "model") {
			if body[v.start] != '"' {
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
		out = append(out, body[prev:v.start]...)
		out = jsonfast.AppendJSONString(out, model)
		prev = v.end
	}
	return append(out, body[prev:]...), nil
}

// jsonBool reads a JSON boolean token; null reads as false.
func jsonBool(tok []byte) (v, ok bool) {
	switch string(tok) {
	case "true":
		return true, true
	case "false", "null":
		return false, true
	}
	return false, false
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
	opts, hasOpts, err := findMember(body, 0, "stream_options")
	if err != nil {
		return nil, false, errors.New("request body is not a json object")
	}
	if !hasOpts || body[opts.start] != '{' {
		if hasOpts {
			// null or a wrong type: replace the value outright
			return splice(body, opts, []byte(`{`+includeUsageMember+`}`)), true, nil
		}
		open := jsonfast.SkipSpace(body, 0) // eachMember checked it is '{'
		ins := []byte(`"stream_options":{` + includeUsageMember + `}`)
		if next := jsonfast.SkipSpace(body, open+1); body[next] != '}' {
			ins = append(ins, ',')
		}
		return splice(body, span{open + 1, open + 1}, ins), true, nil
	}
	iu, ok, err := findMember(body, opts.start, "include_usage")
	if err != nil {
		return nil, false, errors.New("stream_options is not a json object")
	}
	if ok {
		if string(body[iu.start:iu.end]) == "true" {
			return body, false, nil
		}
		return splice(body, iu, []byte("true")), true, nil
	}
	ins := []byte(includeUsageMember)
	if next := jsonfast.SkipSpace(body, opts.start+1); body[next] != '}' {
		ins = append(ins, ',')
	}
	return splice(body, span{opts.start + 1, opts.start + 1}, ins), true, nil
}

// splice returns a new body with s replaced by repl.
func splice(body []byte, s span, repl []byte) []byte {
	out := make([]byte, 0, len(body)-(s.end-s.start)+len(repl))
	out = append(out, body[:s.start]...)
	out = append(out, repl...)
	return append(out, body[s.end:]...)
}

// validStringToken reports whether tok is one well-formed JSON string, so
// it can be copied into output verbatim without decoding and re-encoding.
func validStringToken(tok []byte) bool {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return false
	}
	in := tok[1 : len(tok)-1]
	for i := 0; i < len(in); i++ {
		switch c := in[i]; {
		case c < 0x20 || c == '"':
			return false
		case c == '\\':
			i++
			if i >= len(in) {
				return false
			}
			switch in[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(in) {
					return false
				}
				for _, h := range in[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h|0x20 >= 'a' && h|0x20 <= 'f') {
						return false
					}
				}
				i += 4
			default:
				return false
			}
		}
	}
	return true
}

// isNull reports whether a value span holds JSON null.
func isNull(b []byte, v span) bool { return string(b[v.start:v.end]) == "null" }

// parseIndex reads a small non-negative integer token.
func parseIndex(tok []byte) (int, bool) {
	if len(tok) == 0 || len(tok) > 6 {
		return 0, false
	}
	n := 0
	for _, c := range tok {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
