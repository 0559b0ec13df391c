package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelgate/modelgate/apierror"
)

// APIError is the error bound for a client, apierror.Error; the alias
// keeps the translators' many constructors short.
type APIError = apierror.Error

// Errorf-style constructors keep call sites short.

// constError is an error that is a fixed text, usable as a constant.
type constError string

func (e constError) Error() string { return string(e) }

// BadRequest is a 400 naming the offending parameter.
func BadRequest(param, msg string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Param: param, Message: msg}
}

// StatusForErrorType is statusForErrorType for the batch package, whose
// errored results carry an error type without a status.
func StatusForErrorType(typ string) int { return statusForErrorType(typ) }

// statusForErrorType recovers an HTTP status from an error type of either
// family, the reverse of apierror.OpenAIType and the Anthropic types, for errors that
// arrive inside a stream without a status of their own.
func statusForErrorType(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "rate_limit_exceeded", "rate_limit_error", "insufficient_quota":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "service_unavailable_error", "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// UpstreamError reads an upstream's error body (any of the three formats,
// or plain text) into an APIError carrying the upstream's status and
// message, so it can be re-rendered in the caller's family.
func UpstreamError(status int, body []byte) *APIError {
	e := &APIError{Status: status}
	// Google sometimes wraps its error in a one-element array.
	if b := trimSpace(body); len(b) > 0 && b[0] == '[' {
		var list []json.RawMessage
		if json.Unmarshal(b, &list) == nil && len(list) > 0 {
			body = list[0]
		}
	}
	var probe struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &probe) == nil {
		var detail struct {
			Message string          `json:"message"`
			Param   json.RawMessage `json:"param"`
			Code    json.RawMessage `json:"code"`
		}
		var s string
		switch {
		case len(probe.Error) > 0 && json.Unmarshal(probe.Error, &detail) == nil && detail.Message != "":
			e.Message = detail.Message
			_ = json.Unmarshal(detail.Param, &e.Param)
			_ = json.Unmarshal(detail.Code, &e.Code)
		case len(probe.Error) > 0 && json.Unmarshal(probe.Error, &s) == nil && s != "":
			e.Message = s // Ollama: {"error":"model \"x\" not found"}
		case probe.Message != "":
			e.Message = probe.Message
		}
	}
	if e.Message == "" {
		text := body
		if len(text) > 512 {
			text = text[:512]
		}
		e.Message = string(text)
		if e.Message == "" {
			e.Message = http.StatusText(status)
		}
	}
	return e
}

// decodeError words a request body's decoding error for its client: the
// field and the kind of value it takes, never Go's type names.
func decodeError(err error) *APIError {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := jsonKind(te.Type.Kind().String())
		if te.Field == "" {
			return BadRequest("", fmt.Sprintf("request body must be %s, not %s", want, te.Value))
		}
		return BadRequest(te.Field, fmt.Sprintf("%s must be %s, not %s", te.Field, want, te.Value))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return BadRequest("", fmt.Sprintf("request body is not valid JSON (at byte %d)", se.Offset))
	}
	return BadRequest("", "request body could not be read: "+strings.TrimPrefix(err.Error(), "json: "))
}

// IsAnthropicError reports whether body is an error in Anthropic's shape,
// {"type":"error","error":{"type":…,"message":…}}: the body a Messages
// client may be given as it is.
func IsAnthropicError(body []byte) bool {
	var probe struct {
		Type  string `json:"type"`
		Error *struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	return json.Unmarshal(body, &probe) == nil && probe.Type == "error" && probe.Error != nil && probe.Error.Type != ""
}
