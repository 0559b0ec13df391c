package providers

import "bytes"

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
func ReferencesContent(body []byte) bool {
	for _, k := range [...]string{`"file_id"`, `"file_url"`, `"fileUri"`, `"file_uri"`} {
		if bytes.Contains(body, []byte(k)) {
			return true
		}
	}
	for _, k := range [...]string{`"url"`, `"image_url"`} {
		for rest := body; ; {
			i := bytes.Index(rest, []byte(k))
			if i < 0 {
				break
			}
			rest = rest[i+len(k):]
			if v := valueAfterColon(rest); bytes.HasPrefix(v, []byte(`"http`)) {
				return true
			}
		}
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
// for (its name as found, without the quote), "" when none: a byte scan
// that errs towards finding one. Such tools are those the provider runs
// itself and bills per use on top of tokens (web search and fetch, code
// execution, file search), in each client format: Messages `web_search_*`/`web_fetch_*`/
// `code_execution_*` tool types, Responses `web_search*`/`file_search`/
// `code_interpreter`, chat `web_search_options`, Gemini `googleSearch`,
// `urlContext` and `codeExecution` (and their snake_case spellings).
func ServerTool(body []byte) string {
	for _, k := range [...]string{`"web_search`, `"web_fetch`, `"code_execution`, `"file_search"`, `"code_interpreter"`,
		`"googleSearch`, `"google_search`, `"urlContext"`, `"url_context"`, `"codeExecution"`} {
		if i := bytes.Index(body, []byte(k)); i >= 0 {
			end := i + 1
			for end < len(body) && body[end] != '"' && end-i < 40 {
				end++
			}
			return string(body[i+1 : end])
		}
	}
	return ""
}
