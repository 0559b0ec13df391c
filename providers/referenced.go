package providers

import (
	"bytes"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// DefaultContextWindow is the input a request carrying referenced
// content is reserved at when no deployment of its chain sets
// model_info.max_input_tokens: the largest context window of the
// common models (2,097,152 tokens), so the reservation errs high.
const DefaultContextWindow = 1 << 21

// ReferencesContent reports whether body, in any client format, carries
// content given by reference (a URL or a file id) rather than inline:
// such content is billed many more input tokens than its bytes, so a
// byte count does not bound the request's input. A byte scan for a few
// member names, without parsing: it errs towards true.
//
// The names: members that name content the upstream fetches and
// bills as input while the body holds only its name: file ids (chat
// `file`, Messages `document`/`image` file sources, Responses
// `input_file`/`input_image`), Responses `file_url` and Gemini
// `fileData`'s URI. Inside a JSON string the quotes are escaped, so a
// match is a member name (or a value spelled the same: a match too many
// only reserves more). Then members whose value, when an http(s) URL, is media the
// upstream fetches: chat `image_url.url`, Messages url sources, Responses
// `input_image.image_url`. A data: URL is inline: its bytes are counted.
// The upstream decodes JSON escapes, so a body that spells a printable
// ASCII character as `\u00XX` (which ordinary encoders never do) is
// decoded and scanned again.
func ReferencesContent(body []byte) bool {
	if referencesContent(body) {
		return true
	}
	if d := unescapePrintable(body); d != nil {
		return referencesContent(d)
	}
	return false
}

func referencesContent(body []byte) bool {
	// Two scans of the body, not six: every file member name starts
	// "file and both URL members' names end url".
	for rest := body; ; {
		i := bytes.Index(rest, []byte(`"file`))
		if i < 0 {
			break
		}
		rest = rest[i+len(`"file`):]
		for _, tail := range [...]string{`_id"`, `_url"`, `Uri"`, `_uri"`} {
			if bytes.HasPrefix(rest, []byte(tail)) {
				return true
			}
		}
	}
	for rest, at := body, 0; ; {
		i := bytes.Index(rest, []byte(`url"`))
		if i < 0 {
			break
		}
		end := at + i + len(`url"`)
		name := body[:at+i]
		if bytes.HasSuffix(name, []byte(`"`)) || bytes.HasSuffix(name, []byte(`"image_`)) {
			if v := valueAfterColon(body[end:]); len(v) >= 5 && bytes.EqualFold(v[:5], []byte(`"http`)) {
				return true
			}
		}
		rest, at = body[end:], end
	}
	return false
}

// valueAfterColon is b past JSON whitespace, a colon and whitespace
// again; b itself when no colon follows.
func valueAfterColon(b []byte) []byte {
	b = skipSpace(b)
	if len(b) == 0 || b[0] != ':' {
		return b
	}
	return skipSpace(b[1:])
}

func skipSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\n' || b[0] == '\r') {
		b = b[1:]
	}
	return b
}

// ServerTool is the first server-side tool billed per use that body asks
// for (its name as found), "" when none: a byte scan that errs towards
// finding one. Such tools are those the provider runs itself and bills
// per use on top of tokens (web search and fetch, code execution, file
// search): a tool whose "type" is Messages' `web_search_*`/`web_fetch_*`/
// `code_execution_*` or Responses' `web_search*`/`file_search`/
// `code_interpreter`, or a member named chat's `web_search_options` or
// Gemini's `googleSearch*`, `urlContext` or `codeExecution` (and their
// snake_case spellings). A client's own function named web_search is
// neither. Printable escapes are decoded as in ReferencesContent.
func ServerTool(body []byte) string {
	if s := serverTool(body); s != "" {
		return s
	}
	if d := unescapePrintable(body); d != nil {
		return serverTool(d)
	}
	return ""
}

// PricedContent is ServerTool(body) and, when body asks for no server
// tool, ReferencesContent(body): what the estimate asks of every priced
// request, with body's printable escapes sought and decoded once for
// both rather than once each.
func PricedContent(body []byte) (tool string, referenced bool) {
	if tool = serverTool(body); tool != "" {
		return tool, false
	}
	referenced = referencesContent(body)
	if d := unescapePrintable(body); d != nil {
		if tool = serverTool(d); tool != "" {
			return tool, false
		}
		referenced = referenced || referencesContent(d)
	}
	return "", referenced
}

func serverTool(body []byte) string {
	// One pass from quote to quote, not a scan of the body per name: the
	// estimate runs it over every priced request. At each quote, the
	// names a server tool's type or member may start with there.
	for at := 0; at < len(body); {
		i := bytes.IndexByte(body[at:], '"')
		if i < 0 {
			return ""
		}
		i += at
		at = i + 1
		if at == len(body) {
			return ""
		}
		var types, members []string
		switch body[at] {
		case 'w':
			types, members = []string{`web_search`, `web_fetch`}, []string{`web_search_options"`}
		case 'c':
			types, members = []string{`code_execution`, `code_interpreter"`}, []string{`codeExecution"`, `code_execution"`}
		case 'f':
			types = []string{`file_search"`}
		case 'g':
			members = []string{`googleSearch`, `google_search`}
		case 'u':
			members = []string{`urlContext"`, `url_context"`}
		default:
			continue
		}
		rest := body[at:]
		for _, k := range types {
			if bytes.HasPrefix(rest, []byte(k)) && isTypeValue(body[:i]) {
				return quoted(body[i:])
			}
		}
		for _, k := range members {
			if bytes.HasPrefix(rest, []byte(k)) {
				name := quoted(body[i:])
				if v := skipSpace(body[min(i+len(name)+2, len(body)):]); len(v) > 0 && v[0] == ':' {
					return name
				}
			}
		}
	}
	return ""
}

// isTypeValue reports whether before ends with a "type" member's name
// and colon: what follows is its value.
func isTypeValue(before []byte) bool {
	b := bytes.TrimRight(before, " \t\r\n")
	if len(b) == 0 || b[len(b)-1] != ':' {
		return false
	}
	return bytes.HasSuffix(bytes.TrimRight(b[:len(b)-1], " \t\r\n"), []byte(`"type"`))
}

// quoted is the JSON string b starts with, without its quotes, cut at 40
// bytes.
func quoted(b []byte) string {
	end := 1
	for end < len(b) && b[end] != '"' && end < 41 {
		end++
	}
	return string(b[1:end])
}

// unescapePrintable is body with each JSON escape `\u00XX` of a printable
// ASCII character other than `"` and `\` written as that character, or
// nil when body has no such escape besides those encoders emit on their
// own (Go's HTML-safe `<`, `>`, `&`, and `'`): the common body costs no
// allocation. Python's escapes of non-ASCII text are above 0x7f and
// left alone.
func unescapePrintable(body []byte) []byte {
	first := -1
	for i := 0; i < len(body); i += 2 { // past the escaped character: `\\u0068` is not an escape of h
		j := bytes.IndexByte(body[i:], '\\')
		if j < 0 {
			break
		}
		i += j
		if c, ok := escapedPrintable(body[i:]); ok && c != '<' && c != '>' && c != '&' && c != '\'' {
			first = i
			break
		}
	}
	if first < 0 {
		return nil
	}
	out := make([]byte, 0, len(body))
	out = append(out, body[:first]...)
	for i := first; i < len(body); i++ {
		if body[i] != '\\' {
			out = append(out, body[i])
			continue
		}
		if c, ok := escapedPrintable(body[i:]); ok {
			out = append(out, c)
			i += 5
			continue
		}
		out = append(out, body[i])
		if i+1 < len(body) {
			i++
			out = append(out, body[i])
		}
	}
	return out
}

// escapedPrintable is the character b's leading `\u00XX` escape stands
// for, when it is printable ASCII other than `"` and `\`.
func escapedPrintable(b []byte) (byte, bool) {
	if len(b) < 6 || b[1] != 'u' {
		return 0, false
	}
	r, ok := jsonfast.Hex4(b[2:6])
	if !ok || r < 0x20 || r > 0x7e || r == '"' || r == '\\' {
		return 0, false
	}
	return byte(r), true
}
