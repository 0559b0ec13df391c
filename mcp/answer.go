package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The Go SDK's Streamable HTTP client ends its whole connection, and so
// every call in flight on it, when it cannot decode one message of one
// answer (a body that is not JSON-RPC, an SSE event over its size bound
// or with a line it cannot parse): its Read loop cannot tell which call a
// broken message was for. Over Streamable HTTP the gateway can tell: each
// call is its own POST, and everything in that POST's answer belongs to
// it. answerGuard sits under the SDK's HTTP client and checks each call's
// answer before the SDK reads it; an answer that is malformed, larger
// than maxAnswer, a result for another request id, or an error status
// becomes a JSON-RPC error answer to that call, so one bad answer fails one call and the
// shared session, and every other call on it, goes on.
//
// The standalone GET stream belongs to no call, and the transport allows
// only requests and notifications on it: the SDK would hand a response
// there to whichever call has its id, so a server could answer one key's
// call from another key's tool. Such responses are dropped. A GET that
// resumes a call's stream (Last-Event-ID naming an event of it) is that
// call's again and is checked as its POST was.

// maxAnswer bounds one message of an upstream's answer (a JSON body or one
// SSE event), the same 16 MiB as the SDK's own event bound and the model
// relay's.
const maxAnswer = 16 << 20

type answerGuard struct {
	base http.RoundTripper
	max  int
	// posts says a POST's answer is its call's (Streamable HTTP); on the
	// legacy SSE transport a POST is only accepted (202) and every answer
	// comes on the one GET stream.
	posts bool
	// streams maps the event ids of calls' streams to their calls, for
	// a resumed stream; nil on the legacy SSE transport.
	streams *callStreams
}

func (t answerGuard) RoundTrip(r *http.Request) (*http.Response, error) {
	var id jsonrpc.ID
	var isCall, standalone bool
	if t.posts {
		id, isCall = callID(r)
		if r.Method == http.MethodGet {
			id, isCall = t.streams.resumes(r.Header.Get(lastEventIDHeader))
			standalone = !isCall
		}
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return resp, err
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	sent, got := r.Header.Get(sessionHeader), resp.Header.Get(sessionHeader)
	switch {
	case !isCall && resp.StatusCode/100 != 2:
		// The SDK reads an error status's body whole to find a JSON-RPC
		// error in it; that read is bounded here.
		resp.Body = limitedBody{io.LimitReader(resp.Body, int64(t.max)), resp.Body}
	case !isCall:
		if mt == "text/event-stream" {
			// A stream with no call (the standalone GET stream, or the
			// legacy transport's one stream) has nobody to fail: its bad
			// events are dropped, and so are the standalone stream's
			// responses.
			resp.Body = &sseGuard{src: bufio.NewReaderSize(resp.Body, 4<<10), body: resp.Body, max: t.max,
				standalone: standalone, streams: t.streams}
		}
	case resp.StatusCode == http.StatusNotFound && sent != "":
		// The server saying the session is gone: that one ends it, and
		// the gateway reconnects.
	case resp.StatusCode/100 != 2:
		// The SDK ends the session on most error statuses; for a call it
		// is that call's failure.
		t.replace(resp, t.statusAnswer(resp, id))
	case sent != "" && got != "" && got != sent:
		t.replace(resp, errorAnswer(id, errors.New("the answer names another session")))
	case mt == "application/json":
		data, ok := t.checkJSON(resp.Body, resp.ContentLength, id)
		if !ok {
			t.replace(resp, data)
			break
		}
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		resp.ContentLength = int64(len(data))
		resp.Header.Del("Content-Length")
	case mt == "text/event-stream":
		resp.Body = &sseGuard{src: bufio.NewReaderSize(resp.Body, 4<<10), body: resp.Body, id: id, isCall: isCall, max: t.max, streams: t.streams}
	default:
		// The SDK ends the session on an answer of another type (or none,
		// as a 202 is).
		t.replace(resp, errorAnswer(id, fmt.Errorf("the answer's type %q is neither JSON nor an event stream", bounded(mt))))
	}
	return resp, nil
}

// sessionHeader is Streamable HTTP's session id header; lastEventIDHeader
// names the last event a resumed stream's client saw.
const (
	sessionHeader     = "Mcp-Session-Id"
	lastEventIDHeader = "Last-Event-ID"
)

// statusAnswer is the call's JSON-RPC error for an error status: the
// server's own, when the body is one, else -32603 naming the status.
func (t answerGuard) statusAnswer(resp *http.Response, id jsonrpc.ID) []byte {
	data, _ := io.ReadAll(io.LimitReader(resp.Body, int64(t.max)))
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		if r, ok := msg.(*jsonrpc.Response); ok && r.Error != nil {
			if own, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: r.Error}); err == nil {
				return own
			}
		}
	}
	return errorAnswer(id, fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
}

// replace makes resp a 200 application/json answer with body answer. The
// session header goes: a replaced answer says nothing of the session.
func (t answerGuard) replace(resp *http.Response, answer []byte) {
	resp.Body.Close()
	resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
	resp.Header = resp.Header.Clone()
	resp.Header.Set("Content-Type", "application/json")
	resp.Header.Del("Content-Length")
	resp.Header.Del(sessionHeader)
	resp.ContentLength = int64(len(answer))
	resp.Body = io.NopCloser(bytes.NewReader(answer))
}

type limitedBody struct {
	io.Reader
	io.Closer
}

// callID is the id of the JSON-RPC request r posts, if it is one that
// expects an answer. The SDK builds the request from a byte slice, so
// GetBody hands over a copy without consuming the body.
func callID(r *http.Request) (jsonrpc.ID, bool) {
	if r.Method != http.MethodPost || r.GetBody == nil {
		return jsonrpc.ID{}, false
	}
	body, err := r.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, maxAnswer))
	if err != nil {
		return jsonrpc.ID{}, false
	}
	// The SDK's own encoding of its own request: the standard decoder
	// reads the id at a fraction of the SDK decoder's cost.
	var req struct {
		ID     any    `json:"id"`
		Method string `json:"method"`
	}
	if json.Unmarshal(data, &req) != nil || req.ID == nil || req.Method == "" {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(req.ID)
	return id, err == nil
}

// checkJSON reads a call's application/json answer, bounded, and returns
// it unchanged (ok) when it is one JSON-RPC message that answers id (or a
// server request, which the SDK handles), or else an error answer to id.
// size is the body's Content-Length (-1 unknown): a body of known size
// is read into one buffer of that size rather than a doubling one, up to
// 1 MiB, so a server that claims a large body and sends none costs no
// more than one that sends it.
func (t answerGuard) checkJSON(body io.Reader, size int64, id jsonrpc.ID) (_ []byte, ok bool) {
	var buf bytes.Buffer
	if size > 0 && size <= int64(t.max) {
		buf.Grow(int(min(size, 1<<20)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(io.LimitReader(body, int64(t.max)+1))
	data := buf.Bytes()
	if err != nil {
		return errorAnswer(id, fmt.Errorf("the answer broke off: %v", err)), false
	}
	if len(data) > t.max {
		return errorAnswer(id, fmt.Errorf("the answer is larger than %d bytes", t.max)), false
	}
	if err := answers(data, id); err != nil {
		return errorAnswer(id, err), false
	}
	return data, true
}

// answers checks that data is one JSON-RPC message and, when it is an
// answer, that it answers id.
func answers(data []byte, id jsonrpc.ID) error {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return errors.New("the answer is not a JSON-RPC message")
	}
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID != id {
		return wrongID(resp.ID, id)
	}
	return nil
}

// wrongID is the fault of an answer for request id got in a call of id want.
func wrongID(got, want jsonrpc.ID) error {
	return fmt.Errorf("the answer is for request id %s, not %v", bounded(fmt.Sprint(got.Raw())), want.Raw())
}

// errorAnswer is the JSON-RPC error answer to id that stands for a broken
// one: -32603, the server failed to answer, as the client sees it.
func errorAnswer(id jsonrpc.ID, why error) []byte {
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "bad answer from the MCP server: " + why.Error()}})
	if err != nil {
		// Encoding a response with a valid id and a string cannot fail.
		panic(err)
	}
	return data
}

// sseGuard passes a text/event-stream through event by event, each
// re-encoded from its parsed fields the way the SDK parses them. The first
// bad event of a call's stream is replaced by an error answer to the call,
// which ends the stream; on a stream with no call it is dropped.
type sseGuard struct {
	src    *bufio.Reader
	body   io.Closer
	id     jsonrpc.ID
	isCall bool
	max    int
	// standalone: the standalone GET stream, where responses are dropped.
	standalone bool
	streams    *callStreams // nil on the legacy SSE transport

	out  bytes.Buffer // encoded events not yet read
	done bool         // nothing more comes from src
	err  error        // src's read error, given once out is drained

	// The event being read.
	name, evID, retry string
	data              bytes.Buffer
	hasData           bool
	size              int
	bad               error
}

func (s *sseGuard) Close() error { return s.body.Close() }

func (s *sseGuard) Read(p []byte) (int, error) {
	for s.out.Len() == 0 && !s.done {
		s.readLine()
	}
	if s.out.Len() > 0 {
		return s.out.Read(p)
	}
	if s.err != nil {
		return 0, s.err
	}
	return 0, io.EOF
}

// readLine reads one line, whole or up to the event's bound, and ends the
// event at a blank line or at the end of the stream.
func (s *sseGuard) readLine() {
	line, err := s.src.ReadSlice('\n')
	s.grow(len(line))
	if errors.Is(err, bufio.ErrBufferFull) {
		// A line longer than the buffer, kept while the event is in bound.
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) && !s.done {
			line, err = s.src.ReadSlice('\n')
			s.grow(len(line))
			if s.bad == nil {
				long = append(long, line...)
			}
		}
		line = long
	}
	if s.done {
		return
	}
	eof := err != nil
	if eof && !errors.Is(err, io.EOF) {
		s.err = err
	}
	line = bytes.TrimRight(line, "\r\n")
	if len(line) == 0 {
		s.endEvent()
	} else if s.bad == nil {
		s.field(line)
	}
	if eof {
		s.endEvent()
		s.done = true
	}
}

// grow counts n more bytes of the event against its bound.
func (s *sseGuard) grow(n int) {
	s.size += n
	if s.size > s.max {
		s.fail(fmt.Errorf("an event is larger than %d bytes", s.max))
	}
}

// field takes one "key: value" line as the SDK's scanner does: a line
// with no colon is malformed, data lines join with "\n", other keys are
// ignored.
func (s *sseGuard) field(line []byte) {
	key, val, ok := bytes.Cut(line, []byte{':'})
	if !ok {
		s.fail(errors.New("a line of the event stream is not a field"))
		return
	}
	switch string(key) {
	case "event":
		s.name = string(bytes.TrimSpace(val))
	case "id":
		s.evID = string(bytes.TrimSpace(val))
	case "retry":
		s.retry = string(bytes.TrimSpace(val))
	case "data":
		if s.hasData {
			s.data.WriteByte('\n')
		}
		s.data.Write(bytes.TrimSpace(val))
		s.hasData = true
	}
}

// fail marks the event bad. A call's stream ends here with the call's
// error answer, so nothing more of a runaway event is read; on a stream
// with no call the rest of the event is skipped.
func (s *sseGuard) fail(err error) {
	if s.bad != nil {
		return
	}
	s.bad = err
	s.data.Reset()
	if s.isCall {
		s.out.WriteString("event: message\ndata: ")
		s.out.Write(errorAnswer(s.id, err))
		s.out.WriteString("\n\n")
		s.done = true
	}
}

// endEvent checks the event read and writes it, its error answer, or
// nothing to out.
func (s *sseGuard) endEvent() {
	defer func() {
		s.name, s.evID, s.retry, s.hasData, s.size, s.bad = "", "", "", false, 0, nil
		s.data.Reset()
	}()
	if s.bad != nil {
		return
	}
	if s.hasData && s.data.Len() > 0 && (s.name == "" || s.name == "message") {
		// Decoded once: the check, the standalone drop and the id
		// comparison all read the same message.
		msg, err := jsonrpc.DecodeMessage(s.data.Bytes())
		if err != nil {
			s.fail(errors.New("the answer is not a JSON-RPC message"))
			return
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			if s.standalone {
				s.streams.dropped(resp.ID)
				return
			}
			// No call to compare ids with: only undecodable events are bad.
			if s.isCall && resp.ID != s.id {
				s.fail(wrongID(resp.ID, s.id))
				return
			}
		}
	}
	if s.isCall && s.evID != "" {
		s.streams.add(s.evID, s.id)
	}
	if s.name == "" && s.evID == "" && s.retry == "" && !s.hasData {
		return
	}
	if s.name != "" {
		fmt.Fprintf(&s.out, "event: %s\n", s.name)
	}
	if s.evID != "" {
		fmt.Fprintf(&s.out, "id: %s\n", s.evID)
	}
	if s.retry != "" {
		fmt.Fprintf(&s.out, "retry: %s\n", s.retry)
	}
	if s.hasData {
		for l := range bytes.SplitSeq(s.data.Bytes(), []byte{'\n'}) {
			s.out.WriteString("data: ")
			s.out.Write(l)
			s.out.WriteByte('\n')
		}
	}
	s.out.WriteByte('\n')
}
