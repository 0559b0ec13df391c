package apierror

import "net/http"

// The tables below name an HTTP status in each family's words.

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

// anthropicType is the Anthropic `error.type` for the status.
func anthropicType(status int) string {
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

// googleStatus is the google.rpc status name Gemini clients read beside
// the HTTP code (error.status: INVALID_ARGUMENT, NOT_FOUND, …).
func googleStatus(status int) string {
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

// BedrockErrorType names Bedrock's exception for an HTTP status.
func BedrockErrorType(status int) string {
	switch {
	case status == 400 || status == 405 || status == 413 || status == 422:
		// A wrong method is the caller's mistake too, not a server fault
		// for the SDK to retry.
		return "ValidationException"
	case status == 401 || status == 403:
		return "AccessDeniedException"
	case status == 404:
		return "ResourceNotFoundException"
	case status == 408:
		return "ModelTimeoutException"
	case status == 429:
		return "ThrottlingException"
	case status == 503 || status == 529:
		return "ServiceUnavailableException"
	}
	return "InternalServerException"
}

// bedrockStreamException is the ConverseStream exception event for an
// error of the given status: the union's members are internalServer,
// modelStreamError, validation, throttling and serviceUnavailable.
func bedrockStreamException(status int) string {
	switch {
	case status == 400 || status == 413 || status == 422:
		return "validationException"
	case status == 429:
		return "throttlingException"
	case status == 503 || status == 529:
		return "serviceUnavailableException"
	case status == 500:
		return "internalServerException"
	}
	return "modelStreamErrorException"
}
