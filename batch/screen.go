package batch

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/policy"
)

// The secret firewall's step on a batch's inputs. The worker runs each
// item through the core, which screens it again before any upstream; but
// the items and uploaded files are kept for the batches retention (29
// days by default), so they are stored already screened: under redact
// the stored copy holds the placeholders, under block the batch (or the
// upload) is refused naming the request (docs/batches.md).

// Screener passes one request body, for model, sent by id, through the
// firewall: the body to store (redacted under redact, else as sent), or
// under block the refusal's message (rule and place, never the value).
type Screener func(id *policy.Identity, model string, body []byte) (stored []byte, refusal string)

// screenRequests screens every request of a batch being created, in
// place; param names where the requests came from.
func (s *Service) screenRequests(ident *policy.Identity, reqs []Request, param string) *apierror.Error {
	if s.o.Screen == nil {
		return nil
	}
	for i := range reqs {
		if rule := s.secretID(ident, reqs[i].Model, reqs[i].CustomID); rule != "" {
			return secretRefusal(param, "request "+itoa(i)+": "+idRefusal(rule))
		}
		out, refusal := s.o.Screen(ident, reqs[i].Model, reqs[i].Body)
		if refusal != "" {
			return secretRefusal(param, "request "+itoa(i)+" (custom_id "+ShownID(reqs[i].CustomID)+"): "+refusal)
		}
		reqs[i].Body = out
	}
	return nil
}

// screenUpload screens each line of a batch input file being uploaded:
// a line whose body holds a secret is stored with the body screened; a
// line that is not a request is left for the batch's create to refuse.
func (s *Service) screenUpload(ident *policy.Identity, content []byte) ([]byte, *apierror.Error) {
	if s.o.Screen == nil {
		return content, nil
	}
	var out []byte // nil until a line changes
	line, done := 0, 0
	for rest := content; len(rest) > 0; {
		line++
		raw, next, _ := bytes.Cut(rest, []byte{'\n'})
		start := len(content) - len(rest)
		rest = next
		var in struct {
			CustomID string          `json:"custom_id"`
			Method   string          `json:"method"`
			URL      string          `json:"url"`
			Body     json.RawMessage `json:"body"`
		}
		if json.Unmarshal(raw, &in) != nil || len(in.Body) == 0 {
			continue
		}
		// Only the model is read (its alias's action): a line the create
		// will refuse (stream or background true) is kept in the file
		// all the same, so it is screened as any other.
		var peek struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(in.Body, &peek) != nil || peek.Model == "" {
			continue
		}
		model := peek.Model
		if rule := s.secretID(ident, model, in.CustomID); rule != "" {
			return nil, secretRefusal("file", "line "+itoa(line)+": "+idRefusal(rule))
		}
		body, refusal := s.o.Screen(ident, model, in.Body)
		if refusal != "" {
			return nil, secretRefusal("file", "line "+itoa(line)+" (custom_id "+quoteID(in.CustomID)+"): "+refusal)
		}
		if bytes.Equal(body, in.Body) {
			continue
		}
		in.Body = body
		screened, err := json.Marshal(in)
		if err != nil {
			continue
		}
		out = append(append(out, content[done:start]...), screened...)
		done = start + len(raw)
	}
	if out == nil {
		return content, nil
	}
	return append(out, content[done:]...), nil
}

// ShownID is a custom_id as a refusal names it: as it is when it is
// letters, digits, _ and - (Anthropic's rule), else quoted and bounded.
func ShownID(id string) string {
	if validCustomID(id, true) {
		return id
	}
	return quoteID(id)
}

func secretRefusal(param, msg string) *apierror.Error {
	return &apierror.Error{Status: http.StatusBadRequest, Param: param, Code: "secret_detected", Message: param + ": " + msg}
}

// secretID is the rule a custom_id matches, "" when none. A custom_id
// comes back to the client in the results as it was sent (that is what
// it is for), so one that is a credential cannot be redacted: the batch
// is refused, naming the request by its place, never by the id.
func (s *Service) secretID(ident *policy.Identity, model, customID string) string {
	if s.o.ScreenID == nil {
		return ""
	}
	return s.o.ScreenID(ident, model, customID)
}

func idRefusal(rule string) string {
	return "its custom_id is a credential (rule " + rule + "); a custom_id is stored and returned with the results as sent, so choose one that is not a secret"
}
