package providers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// APIError is an error bound for a client, independent of wire format: the
// handler renders it in the caller's family with Body(format).
type APIError struct {
	Status  int
	Message string
	// Param names the offending request field (OpenAI's `param`), if any.
	Param string
	// Code is OpenAI's machine-readable `code`, if any.
	Code string
	// RetryAfter, when set, is relayed as the Retry-After header.
	RetryAfter string
	// Type overrides the OpenAI error type the status implies (a budget
	// refusal is insufficient_quota, not rate_limit_exceeded).
	Type string
	// NoRetry tells clients not to retry (x-should-retry: false): a
	// refusal only time cures, which SDKs would otherwise hammer.
	NoRetry bool
	// Raw is an upstream's own error body, sent unmodified (with Status)
	// to a client of RawFamily: Claude Code's recovery matches on the
	// wording of Anthropic's errors, which a re-rendering would change.
	Raw       []byte
	RawFamily Format
}

func (e *APIError) Error() string { return e.Message }

// Errorf-style constructors keep call sites short.

// constError is an error that is a fixed text, usable as a constant.
type constError string

func (e constError) Error() string { return string(e) }

// BadRequest is a 400 naming the offending parameter.
func BadRequest(param, msg string) *APIError {
	return &APIError{Status: http.StatusBadRequest, Param: param, Message: msg}
}

// OpenAIType is the OpenAI `error.type` for the status.
func OpenAIType(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "rate_limit_exceeded"
	case status == http.StatusServiceUnavailable || status == 529:
		return "service_unavailable_error"
	case status >= 500:
		return "server_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusUnauthorized:
		return "invalid_request_error"
	}
	return "invalid_request_error"
}

// statusForErrorType recovers an HTTP status from an error type of either
// family, the reverse of OpenAIType and AnthropicType, for errors that
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

// AnthropicType is the Anthropic `error.type` for the status.
func AnthropicType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

type openAIErrorBody struct {
	Error openAIErrorDetail `json:"error"`
}

type openAIErrorDetail struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

type anthropicErrorBody struct {
	Type  string               `json:"type"`
	Error anthropicErrorDetail `json:"error"`
}

type anthropicErrorDetail struct {
	Type    string            `json:"type"`
	Message string            `json:"message"`
	Details *anthropicDetails `json:"details,omitempty"`
}

type anthropicDetails struct {
	ErrorCode string `json:"error_code"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Body renders the error in the given client format (OpenAI or Anthropic).
func (e *APIError) Body(f Format) []byte {
	var b []byte
	f = f.ErrorFamily()
	if e.Raw != nil && f == e.RawFamily {
		return e.Raw
	}
	if f == FormatGemini {
		return e.geminiErrorJSON()
	}
	if f == FormatConverse {
		return BedrockError(e.Message)
	}
	if f == FormatAnthropic {
		d := anthropicErrorDetail{Type: AnthropicType(e.Status), Message: e.Message}
		if e.NoRetry && e.Code != "" {
			d.Details = &anthropicDetails{ErrorCode: e.Code}
		}
		b, _ = json.Marshal(anthropicErrorBody{Type: "error", Error: d})
		return b
	}
	code := e.Code
	typ := e.Type
	if typ == "" {
		typ = OpenAIType(e.Status)
	}
	if code == "" {
		switch e.Status {
		case http.StatusUnauthorized:
			code = "invalid_api_key"
		case http.StatusTooManyRequests:
			code = "rate_limit_exceeded"
		}
	}
	b, _ = json.Marshal(openAIErrorBody{Error: openAIErrorDetail{
		Message: e.Message, Type: typ, Param: optional(e.Param), Code: optional(code)}})
	return b
}

// AppendStreamError appends a terminating error event in the client's
// stream format: a data-only `{"error":...}` for OpenAI (the SDK stops on
// it), an `event: error` for Anthropic.
func (e *APIError) AppendStreamError(dst []byte, f Format) []byte {
	f = f.ErrorFamily()
	if f == FormatAnthropic {
		return AppendSSE(dst, "error", e.Body(f))
	}
	if f == FormatGemini {
		// Google's own in-stream error: a bare object, no data: prefix.
		return append(append(dst, e.Body(f)...), '\n')
	}
	if f == FormatConverse {
		// Named for the exception it is; the event-stream framer makes it
		// an exception message.
		return AppendSSE(dst, converseStreamException(e.Status), e.Body(f))
	}
	return AppendSSE(dst, "", e.Body(f))
}

// Write sends the error as a complete JSON response.
func (e *APIError) Write(w http.ResponseWriter, f Format) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter != "" {
		h.Set("Retry-After", e.RetryAfter)
	}
	if e.NoRetry {
		h.Set("X-Should-Retry", "false")
	}
	if f.ErrorFamily() == FormatConverse {
		// The AWS SDKs name the error they raise by this header.
		h.Set("X-Amzn-Errortype", BedrockErrorType(e.Status))
	}
	body := e.Body(f)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
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
