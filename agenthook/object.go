package agenthook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// object is a JSON object that keeps its members' order and their values'
// exact bytes, so editing one key of a user's settings file leaves the rest
// as the user wrote it (a map would reorder keys and reformat numbers).
type object []member

type member struct {
	Key   string
	Value json.RawMessage
}

func parseObject(data []byte) (object, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("not a JSON object")
	}
	o := object{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, ok := tok.(string)
		if !ok {
			return nil, errors.New("object key is not a string")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		o = append(o, member{Key: key, Value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("data after the JSON object")
	}
	return o, nil
}

func (o object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		if m.Value == nil {
			b.WriteString("null")
		} else {
			b.Write(m.Value)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// get returns the last value for key, which is the one JSON decoders use.
func (o object) get(key string) (json.RawMessage, bool) {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].Key == key {
			return o[i].Value, true
		}
	}
	return nil, false
}

// setJSON replaces key's value in place, or appends the key.
func (o *object) setJSON(key string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	for i := len(*o) - 1; i >= 0; i-- {
		if (*o)[i].Key == key {
			(*o)[i].Value = raw
			return nil
		}
	}
	*o = append(*o, member{Key: key, Value: raw})
	return nil
}

func (o *object) remove(key string) {
	kept := (*o)[:0]
	for _, m := range *o {
		if m.Key != key {
			kept = append(kept, m)
		}
	}
	*o = kept
}

// childObject returns key's value as an object, empty if absent or null; a
// value of another type is an error, since overwriting it would lose data.
func (o object) childObject(key string) (object, error) {
	raw, ok := o.get(key)
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return object{}, nil
	}
	child, err := parseObject(raw)
	if err != nil {
		return nil, fmt.Errorf("%q is not an object", key)
	}
	return child, nil
}

// childArray is childObject for arrays.
func (o object) childArray(key string) ([]json.RawMessage, error) {
	raw, ok := o.get(key)
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return nil, nil
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(raw, &arr); err != nil {
		return nil, fmt.Errorf("%q is not an array", key)
	}
	return arr, nil
}
