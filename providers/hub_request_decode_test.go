package providers

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fillEvery sets every exported field of the value v points to, nested
// structs, slices and pointers included, to a distinctive non-zero value.
func fillEvery(t *testing.T, v reflect.Value, path string, depth int) {
	t.Helper()
	if depth > 6 {
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEvery(t, v.Elem(), path, depth+1)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Type().Field(i)
			if !f.IsExported() || f.Tag.Get("json") == "-" {
				continue
			}
			fillEvery(t, v.Field(i), path+"."+f.Name, depth+1)
		}
	case reflect.Slice:
		if v.Type() == reflect.TypeOf(json.RawMessage(nil)) {
			v.Set(reflect.ValueOf(json.RawMessage(`"raw ` + path + `"`)))
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fillEvery(t, s.Index(0), path+"[0]", depth+1)
		v.Set(s)
	case reflect.String:
		v.SetString("value of " + path)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64, reflect.Int32:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fillEvery(t, k, path+"{k}", depth+1)
		fillEvery(t, e, path+"{v}", depth+1)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Interface:
		v.Set(reflect.ValueOf("any of " + path))
	default:
		t.Fatalf("%s: kind %s has no sample value; extend fillEvery", path, v.Kind())
	}
}

// TestOpenAIRequestReaderHandlesEveryField: the hand-written single-pass
// reader must fill every field OpenAIRequest (and what it nests) declares,
// exactly as encoding/json does. A field added to the structs but not to
// the reader would otherwise be dropped silently on its way upstream.
func TestOpenAIRequestReaderHandlesEveryField(t *testing.T) {
	var full OpenAIRequest
	fillEvery(t, reflect.ValueOf(&full).Elem(), "req", 0)
	full.Messages[0].Content = json.RawMessage(`"hello"`)
	body, err := json.Marshal(full)
	if err != nil {
		t.Fatal(err)
	}
	var want OpenAIRequest
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	var got OpenAIRequest
	if !readOpenAIRequest(body, &got) {
		t.Fatalf("the fast reader gave up on a request with every field set:\n%s", body)
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.Marshal(got)
		t.Fatalf("the fast reader dropped or changed fields:\n got %s\nwant %s", gj, body)
	}
	// Every field really was set: a zero would hide a field the reader skips.
	for _, key := range jsonKeys(reflect.TypeOf(OpenAIRequest{})) {
		if !strings.Contains(string(body), `"`+key+`":`) {
			t.Errorf("sample body lacks %q", key)
		}
	}
}

func jsonKeys(typ reflect.Type) []string {
	var out []string
	for i := 0; i < typ.NumField(); i++ {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}
