package responses

import (
	"encoding/json"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// marshalRawList is json.Marshal(list) for a stored response's input or
// output items, without reflection: each item is checked and compacted
// as encoding/json does a json.RawMessage (insignificant space dropped;
// <, >, &, U+2028 and U+2029 escaped in strings). A list with an item
// encoding/json would refuse goes to json.Marshal, so the result, nil on
// error included, is always its (FuzzMarshalRawList).
func marshalRawList(list []json.RawMessage) []byte {
	if list == nil {
		return []byte("null")
	}
	size := 2
	for _, raw := range list {
		size += len(raw) + 1
	}
	out := append(make([]byte, 0, size), '[')
	for i, raw := range list {
		if i > 0 {
			out = append(out, ',')
		}
		switch {
		case raw == nil:
			out = append(out, "null"...)
		case jsonfast.Valid(raw):
			out = jsonfast.AppendCompactRaw(out, raw)
		default:
			out, _ = json.Marshal(list)
			return out
		}
	}
	return append(out, ']')
}
