package batch

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelgate/modelgate/apierror"
)

// Request is one decoded batch request: the caller's id for it, the
// model it names and its body, as the item will be served.
type Request struct {
	CustomID string
	Model    string
	Body     []byte
}

// readBounded reads a create request's body up to limit bytes, counted
// against h.
func readBounded(w http.ResponseWriter, r *http.Request, limit int64, h *hold) ([]byte, *apierror.Error) {
	b, err := io.ReadAll(http.MaxBytesReader(w, h.body(r), limit))
	var tooBig *http.MaxBytesError
	switch {
	case h.refused != nil:
		return nil, h.refused
	case errors.As(err, &tooBig):
		return nil, tooLarge(limit)
	case err != nil:
		return nil, &apierror.Error{Status: http.StatusBadRequest, Message: "reading the request body failed: " + err.Error()}
	}
	return b, nil
}

func tooLarge(limit int64) *apierror.Error {
	return &apierror.Error{Status: http.StatusRequestEntityTooLarge, Code: "file_too_large",
		Message: "a batch's input is limited to " + strconv.FormatInt(limit, 10) + " bytes on this gateway (batch_max_bytes); split it into several batches"}
}

func tooMany(n, limit int) *apierror.Error {
	return &apierror.Error{Status: http.StatusBadRequest, Code: "too_many_requests_in_batch",
		Message: "a batch holds at most " + itoa(limit) + " requests on this gateway (batch_max_items), this one has " + itoa(n) + "; split it into several batches"}
}

func invalid(param, msg string) *apierror.Error {
	return &apierror.Error{Status: http.StatusBadRequest, Param: param, Code: "invalid_request", Message: param + ": " + msg}
}

// validCustomID is both APIs' rule for custom_id as Anthropic states it:
// 1 to 64 of [A-Za-z0-9_-]. OpenAI's ids are free text; the gateway takes
// up to 512 bytes of valid UTF-8 there (strict false).
func validCustomID(id string, strict bool) bool {
	if !strict {
		// No control characters: an id is echoed in results and error
		// messages, and PostgreSQL's text refuses NUL.
		return id != "" && len(id) <= 512 && utf8.ValidString(id) && !strings.ContainsFunc(id, unicode.IsControl)
	}
	if id == "" || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// peekParams checks one request body: a JSON object naming a model, not
// asking for a stream (a batch's answers are whole).
func peekParams(body json.RawMessage, param string) (string, *apierror.Error) {
	var p struct {
		Model      *string          `json:"model"`
		Stream     *json.RawMessage `json:"stream"`
		Background *json.RawMessage `json:"background"`
	}
	if len(body) == 0 || body[0] != '{' || json.Unmarshal(body, &p) != nil {
		return "", invalid(param, "want a JSON object with the request's parameters")
	}
	if p.Model == nil || *p.Model == "" {
		return "", invalid(param+".model", "missing; name the model (an alias GET /v1/models lists)")
	}
	if p.Stream != nil && string(bytes.TrimSpace(*p.Stream)) == "true" {
		return "", invalid(param+".stream", "streaming is not supported in batches; leave stream out")
	}
	if p.Background != nil && string(bytes.TrimSpace(*p.Background)) == "true" {
		return "", invalid(param+".background", "a batch runs its requests in the background already; leave background out")
	}
	return *p.Model, nil
}

// DecodeMessageBatch reads an Anthropic create body:
// {"requests":[{"custom_id","params":{…}}]}, at most maxItems of them,
// each custom_id unique. Errors name the request by index.
func DecodeMessageBatch(body []byte, maxItems int) ([]Request, *apierror.Error) {
	var in struct {
		Requests []struct {
			CustomID *string         `json:"custom_id"`
			Params   json.RawMessage `json:"params"`
		} `json:"requests"`
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, invalid("requests", "the body is not the JSON object {\"requests\":[…]}: "+jsonProblem(err))
	}
	if len(in.Requests) == 0 {
		return nil, invalid("requests", "give at least one request")
	}
	if len(in.Requests) > maxItems {
		return nil, tooMany(len(in.Requests), maxItems)
	}
	seen := make(map[string]int, len(in.Requests))
	out := make([]Request, len(in.Requests))
	for i, q := range in.Requests {
		at := "requests." + itoa(i)
		if q.CustomID == nil || !validCustomID(*q.CustomID, true) {
			return nil, invalid(at+".custom_id", "want 1 to 64 letters, digits, '_' or '-'")
		}
		if j, dup := seen[*q.CustomID]; dup {
			return nil, invalid(at+".custom_id", "same as requests."+itoa(j)+"'s; every custom_id in a batch must be unique")
		}
		seen[*q.CustomID] = i
		model, e := peekParams(q.Params, at+".params")
		if e != nil {
			return nil, e
		}
		out[i] = Request{CustomID: *q.CustomID, Model: model, Body: q.Params}
	}
	return out, nil
}

// DecodeOpenAIInput reads an OpenAI batch input file: JSON Lines of
// {"custom_id","method":"POST","url","body"}, every url the batch's
// endpoint, at most maxItems lines, blank lines skipped. Errors name the
// line (1-based).
func DecodeOpenAIInput(content []byte, endpoint string, maxItems int) ([]Request, *apierror.Error) {
	var out []Request
	seen := map[string]int{}
	line := 0
	for len(content) > 0 {
		line++
		var raw []byte
		if i := bytes.IndexByte(content, '\n'); i >= 0 {
			raw, content = content[:i], content[i+1:]
		} else {
			raw, content = content, nil
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 {
			continue
		}
		at := "input_file_id"
		where := "line " + itoa(line) + " of the input file: "
		var in struct {
			CustomID *string         `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, lineError(at, where+"not a JSON object: "+jsonProblem(err))
		}
		if in.CustomID == nil || !validCustomID(*in.CustomID, false) {
			return nil, lineError(at, where+"custom_id: want a non-empty string of at most 512 bytes")
		}
		if j, dup := seen[*in.CustomID]; dup {
			return nil, lineError(at, where+"custom_id "+quoteID(*in.CustomID)+" is also on line "+itoa(j)+"; every custom_id must be unique")
		}
		seen[*in.CustomID] = line
		if in.Method != http.MethodPost {
			return nil, lineError(at, where+"method: want \"POST\"")
		}
		if in.URL != endpoint {
			return nil, lineError(at, where+"url "+quoteID(in.URL)+" differs from the batch's endpoint "+endpoint+"; one batch serves one endpoint")
		}
		model, e := peekParams(in.Body, "body")
		if e != nil {
			return nil, lineError(at, where+e.Message)
		}
		if len(out) == maxItems {
			return nil, tooMany(maxItems+1, maxItems)
		}
		out = append(out, Request{CustomID: *in.CustomID, Model: model, Body: in.Body})
	}
	if len(out) == 0 {
		return nil, lineError("input_file_id", "the input file holds no request; want one JSON object per line")
	}
	return out, nil
}

func lineError(param, msg string) *apierror.Error {
	return &apierror.Error{Status: http.StatusBadRequest, Param: param, Code: "invalid_request", Message: msg}
}

// jsonProblem names what encoding/json found wrong, bounded.
func jsonProblem(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
