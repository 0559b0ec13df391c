package apierror

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

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

// Body renders the error in the family a reads.
func (e *Error) Body(a Audience) []byte {
	var b []byte
	f := a.ErrorFamily()
	if e.Raw != nil && f == e.RawFamily {
		return e.Raw
	}
	switch f {
	case Gemini:
		return e.geminiErrorJSON()
	case Bedrock:
		return BedrockBody(e.Message)
	case Anthropic:
		d := anthropicErrorDetail{Type: anthropicType(e.Status), Message: e.Message}
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
func (e *Error) AppendStreamError(dst []byte, a Audience) []byte {
	f := a.ErrorFamily()
	switch f {
	case Anthropic:
		return appendSSE(dst, "error", e.Body(f))
	case Gemini:
		// Google's own in-stream error: a bare object, no data: prefix.
		return append(append(dst, e.Body(f)...), '\n')
	case Bedrock:
		// Named for the exception it is; the event-stream framer makes it
		// an exception message.
		return appendSSE(dst, bedrockStreamException(e.Status), e.Body(f))
	}
	return appendSSE(dst, "", e.Body(f))
}

// appendSSE appends one server-sent event (providers.AppendSSE, which
// this leaf cannot import).
func appendSSE(dst []byte, name string, data []byte) []byte {
	if name != "" {
		dst = append(append(append(dst, "event: "...), name...), '\n')
	}
	return append(append(append(dst, "data: "...), data...), '\n', '\n')
}

// Write sends the error as a complete JSON response.
func (e *Error) Write(w http.ResponseWriter, a Audience) {
	f := a.ErrorFamily()
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.RetryAfter != "" {
		h.Set("Retry-After", e.RetryAfter)
	}
	if e.NoRetry {
		h.Set("X-Should-Retry", "false")
	}
	if f == Bedrock {
		// The AWS SDKs name the error they raise by this header.
		h.Set("X-Amzn-Errortype", BedrockErrorType(e.Status))
	}
	body := e.Body(f)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

type geminiErrorBody struct {
	Error geminiErrorDetail `json:"error"`
}

type geminiErrorDetail struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details,omitempty"`
}

// geminiErrorJSON renders e as Google does. A rate refusal carries
// RetryInfo, which Gemini CLI takes as the least wait; a budget refusal
// (nothing but time cures it) carries a per-day quota id, which the CLI
// treats as terminal instead of retrying for minutes.
func (e *Error) geminiErrorJSON() []byte {
	d := geminiErrorDetail{Code: e.Status, Message: e.Message, Status: googleStatus(e.Status)}
	if e.Status == http.StatusTooManyRequests {
		if e.NoRetry {
			d.Details = append(d.Details, map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure",
				"violations": []map[string]string{{"quotaId": "GatewayBudgetPerDay", "description": e.Message}}})
		} else if secs, err := strconv.Atoi(strings.TrimSpace(e.RetryAfter)); err == nil && secs >= 0 {
			d.Details = append(d.Details, map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strconv.Itoa(secs) + "s"})
		}
	}
	b, _ := json.Marshal(geminiErrorBody{Error: d})
	return b
}

// BedrockBody is Bedrock's error body, {"message": …}; the exception's
// name travels in x-amzn-ErrorType.
func BedrockBody(message string) []byte {
	b, _ := json.Marshal(struct {
		Message string `json:"message"`
	}{message})
	return b
}
