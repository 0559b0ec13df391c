// Package apierror is the gateway's one error type bound for a client,
// and how it is written in each client family's shape. It is a leaf: it
// imports nothing of the gateway, so policy and identity refuse a caller
// without importing the translators in providers.
package apierror

// Error is an error bound for a client, independent of wire format: the
// door renders it in the caller's family with Body, Write or
// AppendStreamError.
type Error struct {
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
	RawFamily Family
}

func (e *Error) Error() string { return e.Message }

// Family is an error shape clients read. Several client formats share
// one (Responses and embeddings clients read OpenAI's).
type Family uint8

const (
	// OpenAI is {"error":{"message","type","param","code"}}, in a stream a
	// data-only event.
	OpenAI Family = iota
	// Anthropic is {"type":"error","error":{"type","message"}}, in a
	// stream an `event: error`.
	Anthropic
	// Gemini is google.rpc's {"error":{"code","message","status"}}, in a
	// stream a bare object on its own line.
	Gemini
	// Bedrock is {"message"} with the exception in x-amzn-ErrorType, in a
	// stream an exception event.
	Bedrock
)

// ErrorFamily makes a Family an Audience of itself.
func (f Family) ErrorFamily() Family { return f }

// Audience is whoever an error is written for: anything that knows the
// error family its reader expects (a providers.Format, or a Family).
type Audience interface {
	ErrorFamily() Family
}
