package secretscan

import (
	"bytes"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// dataWrap puts a free-form value where the formats put tool arguments,
// so that none of its members is read as a format's own (a top-level
// "id" or "signature" of a body is skipped; an argument so named is text).
const dataWrap = `{"arguments":`

// ScreenData is Screen for a free-form JSON value that is not a request
// body, such as an MCP tool call's arguments: every string and member
// name in it is scanned, whatever its name. Locations start at
// "arguments".
func (f *Firewall) ScreenData(action Action, data []byte, names Namer) (Verdict, error) {
	if action == Off || action == "" {
		return Verdict{Body: data}, nil
	}
	// One value, or the wrapper could be closed early by the data and
	// what follows read as the body's own members.
	if !jsonfast.Valid(data) {
		return Verdict{Body: data}, errSyntax
	}
	wrapped := make([]byte, 0, len(dataWrap)+len(data)+1)
	wrapped = append(append(append(wrapped, dataWrap...), data...), '}')
	v, err := f.Screen(action, wrapped, names)
	if err != nil {
		return Verdict{Body: data}, err
	}
	if len(v.Detections) == 0 || !bytes.HasPrefix(v.Body, []byte(dataWrap)) {
		v.Body = data
		return v, nil
	}
	v.Body = bytes.TrimSpace(v.Body[len(dataWrap) : len(v.Body)-1])
	return v, nil
}
