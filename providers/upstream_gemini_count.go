package providers

import (
	"encoding/json"
	"errors"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// GeminiCountBody wraps gen, the generateContent body a generation on
// model would send, as countTokens takes it when tools, the system
// instruction and the configuration are to be counted too
// ({"generateContentRequest":{"model":"models/m",…}}).
func GeminiCountBody(gen []byte, model string) ([]byte, error) {
	gen = trimSpace(gen)
	if len(gen) < 2 || gen[0] != '{' {
		return nil, errors.New("the generateContent body is not an object")
	}
	out := make([]byte, 0, len(gen)+len(model)+48)
	out = append(out, `{"generateContentRequest":{"model":`...)
	out = jsonfast.AppendJSONString(out, "models/"+model)
	if gen[1] != '}' {
		out = append(out, ',')
	}
	out = append(out, gen[1:]...)
	return append(out, '}'), nil
}

// GeminiCountResult reads countTokens' answer ({"totalTokens":N,…}).
func GeminiCountResult(raw []byte) (int, error) {
	var r struct {
		TotalTokens *int `json:"totalTokens"`
	}
	if json.Unmarshal(raw, &r) != nil || r.TotalTokens == nil || *r.TotalTokens < 0 {
		return 0, errors.New("the token count could not be read")
	}
	return *r.TotalTokens, nil
}
