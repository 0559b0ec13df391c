package providers

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// GoogleStatus is the google.rpc status name Gemini clients read beside
// the HTTP code (error.status: INVALID_ARGUMENT, NOT_FOUND, …).
func GoogleStatus(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusConflict:
		return "ABORTED"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case http.StatusNotImplemented:
		return "UNIMPLEMENTED"
	case http.StatusServiceUnavailable, 529, http.StatusBadGateway:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "FAILED_PRECONDITION"
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
func (e *APIError) geminiErrorJSON() []byte {
	d := geminiErrorDetail{Code: e.Status, Message: e.Message, Status: GoogleStatus(e.Status)}
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
