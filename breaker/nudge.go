package breaker

import (
	"bytes"
	"encoding/json"
	"errors"
)

// nudged is body with note added at the end of its history, the one
// change to a request's content the gateway makes: a Messages request's
// last (user) message gets a text block after its tool results; the
// other formats get a user message of their own. At the end, the note
// leaves the prompt cache's prefix as it was.
func nudged(f Format, body []byte, note string) ([]byte, error) {
	t, ok := tailOf(body, f.member())
	if !ok || t.n == 0 {
		return nil, errors.New("no history to add a note to")
	}
	last := t.spans[t.n-1]
	text, _ := json.Marshal(note)
	var add []byte
	switch f {
	case FormatMessages:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(body[last.start:last.end], &m); err != nil {
			return nil, err
		}
		if string(m["role"]) != `"user"` {
			add = append(append([]byte(`{"role":"user","content":`), text...), '}')
			break
		}
		block := append(append([]byte(`{"type":"text","text":`), text...), '}')
		c := bytes.TrimSpace(m["content"])
		switch {
		case len(c) > 0 && c[0] == '"':
			c = append(append(append(append([]byte(`[{"type":"text","text":`), c...), "},"...), block...), ']')
		case len(c) > 1 && c[0] == '[':
			inner := bytes.TrimSpace(c[1 : len(c)-1])
			if len(inner) == 0 {
				c = append(append([]byte{'['}, block...), ']')
			} else {
				c = append(append(append(append([]byte{'['}, inner...), ','), block...), ']')
			}
		default:
			return nil, errors.New("the last message has no content to add a note to")
		}
		m["content"] = c
		msg, err := json.Marshal(m)
		if err != nil {
			return nil, err
		}
		return splice(body, last, msg, false), nil
	case FormatChat:
		add = append(append([]byte(`{"role":"user","content":`), text...), '}')
	case FormatResponses:
		add = append(append([]byte(`{"type":"message","role":"user","content":`), text...), '}')
	case FormatGemini:
		add = append(append([]byte(`{"role":"user","parts":[{"text":`), text...), "}]}"...)
	default:
		return nil, errors.New("this format takes no note")
	}
	return splice(body, last, add, true), nil
}

// splice replaces body[s] with v, or puts v after it as the next array
// element when after is set.
func splice(body []byte, s span, v []byte, after bool) []byte {
	out := make([]byte, 0, len(body)+len(v)+1)
	if after {
		out = append(out, body[:s.end]...)
		out = append(out, ',')
		out = append(out, v...)
		return append(out, body[s.end:]...)
	}
	out = append(out, body[:s.start]...)
	out = append(out, v...)
	return append(out, body[s.end:]...)
}
