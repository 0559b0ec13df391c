package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// EchoTransport is the built-in echo/ backend: an in-process upstream that
// speaks OpenAI chat completions, so the gateway routes and translates it
// like any OpenAI-compatible server. It answers POST …/chat/completions with
// the text of the last user message (text parts concatenated; "" if there
// is none).
//
// Non-streaming requests get a chat.completion with usage. With stream:true
// the body is a lazily rendered SSE stream: a role chunk, the text as
// word-sized content deltas, a finish chunk, a usage chunk only when
// stream_options.include_usage is set, then data: [DONE]. Each chunk is
// rendered when the reader asks for it, and a cancelled request context
// ends the stream with the context's error.
//
// Usage is an estimate, since no tokenizer is involved: prompt tokens are
// the bytes of every message's text divided by 4, completion tokens the
// reply's bytes divided by 4, each at least 1. The response id is
// "chatcmpl-echo-<n>" where n is the FNV-1a hash of the request body, so
// the same request always gets the same reply.
type EchoTransport struct{}

// RoundTrip implements http.RoundTripper.
func (EchoTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/embeddings") {
		return echoEmbeddings(req, body), nil
	}
	if req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, "/chat/completions") {
		return echoError(req, &APIError{Status: http.StatusNotFound,
			Message: "the echo backend only serves POST /chat/completions and /embeddings"}), nil
	}
	var in OpenAIRequest
	if err := decodeOpenAIRequest(body, &in); err != nil {
		return echoError(req, err), nil
	}
	reply, promptBytes, apiErr := echoReply(in.Messages)
	if apiErr != nil {
		return echoError(req, apiErr), nil
	}
	h := fnv.New32a()
	h.Write(body)
	id := "chatcmpl-echo-" + strconv.FormatUint(uint64(h.Sum32()), 10)
	prompt, completion := max(1, int64(promptBytes)/4), max(1, int64(len(reply))/4)
	created := time.Now().Unix()

	if in.Stream {
		s := &echoStream{
			ctx:          req.Context(),
			rest:         reply,
			includeUsage: in.StreamOptions != nil && in.StreamOptions.IncludeUsage,
			prompt:       prompt,
			completion:   completion,
		}
		s.ch.init(id, created, in.Model)
		hdr := http.Header{}
		hdr.Set("Content-Type", "text/event-stream")
		hdr.Set("Cache-Control", "no-cache")
		return echoResponse(req, http.StatusOK, hdr, s, -1), nil
	}

	out := appendOpenAIResponse(nil, &OpenAIResponse{
		ID:      id,
		Object:  "chat.completion",
		Created: created,
		Model:   in.Model,
		Choices: []OpenAIChoice{{
			Message:      OpenAIResponseMessage{Role: "assistant", Content: &reply},
			FinishReason: "stop",
		}},
		Usage: appendOpenAIUsage(nil, Usage{InputTokens: prompt, OutputTokens: completion}),
	})
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/json")
	return echoResponse(req, http.StatusOK, hdr, io.NopCloser(bytes.NewReader(out)), int64(len(out))), nil
}

// echoReply returns the last user message's text and the byte count of all
// message text, the basis of the usage estimate.
func echoReply(msgs []OpenAIMessage) (string, int, *APIError) {
	reply, total := "", 0
	for i := range msgs {
		text, err := echoText(msgs[i].Content)
		if err != nil {
			p := "messages[" + strconv.Itoa(i) + "].content"
			return "", 0, BadRequest(p, p+": must be a string or an array of content parts")
		}
		total += len(text)
		if msgs[i].Role == "user" {
			reply = text
		}
	}
	return reply, total, nil
}

func echoText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []OpenAIContentPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

func echoResponse(req *http.Request, status int, h http.Header, body io.ReadCloser, n int64) *http.Response {
	return &http.Response{
		Status:        strconv.Itoa(status) + " " + http.StatusText(status),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		Body:          body,
		ContentLength: n,
		Request:       req,
	}
}

func echoError(req *http.Request, e *APIError) *http.Response {
	b := e.Body(FormatOpenAI)
	h := http.Header{}
	h.Set("Content-Type", "application/json")
	return echoResponse(req, e.Status, h, io.NopCloser(bytes.NewReader(b)), int64(len(b)))
}

var errEchoClosed = errors.New("read on closed echo response body")

// echoStream renders the SSE body one chunk per refill, so nothing is
// produced ahead of the reader and a cancelled context stops it between
// chunks.
type echoStream struct {
	ctx          context.Context
	ch           chunker
	rest         string // reply text not yet sent
	includeUsage bool
	prompt       int64
	completion   int64

	stage  int
	buf    []byte
	off    int
	closed atomic.Bool
}

const (
	echoRole = iota
	echoContent
	echoFinish
	echoUsage
	echoDone
	echoEOF
)

func (s *echoStream) Read(p []byte) (int, error) {
	for s.off >= len(s.buf) {
		if s.closed.Load() {
			return 0, errEchoClosed
		}
		if err := s.ctx.Err(); err != nil {
			return 0, err
		}
		if !s.next() {
			return 0, io.EOF
		}
	}
	n := copy(p, s.buf[s.off:])
	s.off += n
	return n, nil
}

// next renders the following chunk into buf; false at the end.
func (s *echoStream) next() bool {
	s.buf, s.off = s.buf[:0], 0
	switch s.stage {
	case echoRole:
		s.buf = s.ch.role(s.buf)
		s.stage = echoContent
	case echoContent:
		if s.rest == "" {
			s.stage = echoFinish
			return s.next()
		}
		n := wordEnd(s.rest)
		s.buf = s.ch.content(s.buf, s.rest[:n])
		s.rest = s.rest[n:]
	case echoFinish:
		s.buf = s.ch.finish(s.buf, "stop")
		s.stage = echoUsage
	case echoUsage:
		s.stage = echoDone
		if !s.includeUsage {
			return s.next()
		}
		s.buf = s.ch.usage(s.buf, Usage{InputTokens: s.prompt, OutputTokens: s.completion})
	case echoDone:
		s.buf = append(s.buf, sseDone...)
		s.stage = echoEOF
	default:
		return false
	}
	return true
}

func (s *echoStream) Close() error {
	s.closed.Store(true)
	return nil
}

// wordEnd is the length of the first word of s with the whitespace around
// it, so the deltas concatenate back to exactly s.
func wordEnd(s string) int {
	i := 0
	for i < len(s) && jsonfast.IsSpace(s[i]) {
		i++
	}
	for i < len(s) && !jsonfast.IsSpace(s[i]) {
		i++
	}
	for i < len(s) && jsonfast.IsSpace(s[i]) {
		i++
	}
	return i
}
