package fakes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// Fixed usage the Gemini fake reports (its prompt count includes the
// cached part; thoughts are apart from candidates).
const (
	GeminiPromptTokens     = 21
	GeminiCachedTokens     = 6
	GeminiCandidatesTokens = 5
	GeminiThoughtsTokens   = 3
	GeminiThoughtSignature = "c2lnLWdlbWluaS0x"
	GeminiAPIKey           = "upstream-gemini-secret"
)

// Gemini returns a server speaking Google's native Gemini API:
// POST /v1beta/models/{model}:generateContent and
// :streamGenerateContent?alt=sse (data-only SSE of whole
// GenerateContentResponse chunks, no [DONE]). It checks x-goog-api-key,
// answers a weather question with a signed functionCall, and refuses a
// function call sent back without its thought signature, as Gemini 3 does.
func Gemini(o Options, rec *Recorder) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := readBody(r)
		if rec != nil {
			rec.add(r, body)
		}
		fail := func(status int, gstatus, msg string) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprintf(w, `{"error":{"code":%d,"message":%q,"status":%q}}`, status, msg, gstatus)
		}
		rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/")
		i := strings.LastIndexByte(rest, ':')
		if !ok || i <= 0 || r.Method != http.MethodPost {
			fail(http.StatusNotFound, "NOT_FOUND", "no such method")
			return
		}
		action := rest[i+1:]
		if r.Header.Get("X-Goog-Api-Key") != GeminiAPIKey || r.URL.Query().Get("key") != "" {
			fail(http.StatusBadRequest, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.")
			return
		}
		if o.Status != 0 {
			fail(o.Status, "UNAVAILABLE", fmt.Sprintf("fake failure %d", o.Status))
			return
		}
		if action == "batchEmbedContents" {
			geminiBatchEmbed(w, body)
			return
		}
		if action == "countTokens" {
			geminiCount(w, body, rest[:i], fail)
			return
		}
		var req struct {
			Contents []struct {
				Role  string            `json:"role"`
				Parts []json.RawMessage `json:"parts"`
			} `json:"contents"`
			Tools            json.RawMessage `json:"tools"`
			GenerationConfig struct {
				ThinkingConfig struct {
					IncludeThoughts bool `json:"includeThoughts"`
				} `json:"thinkingConfig"`
			} `json:"generationConfig"`
		}
		if json.Unmarshal(body, &req) != nil || len(req.Contents) == 0 {
			fail(http.StatusBadRequest, "INVALID_ARGUMENT", "* GenerateContentRequest.contents: contents is not specified")
			return
		}
		for _, c := range req.Contents {
			for j, p := range c.Parts {
				if c.Role == "model" && j == 0 && strings.Contains(string(p), `"functionCall"`) && !strings.Contains(string(p), `"thoughtSignature"`) {
					fail(http.StatusBadRequest, "INVALID_ARGUMENT", "Function call is missing a thought_signature in functionCall parts.")
					return
				}
			}
		}
		last := req.Contents[len(req.Contents)-1]
		var lastParts []json.RawMessage
		lastParts = append(lastParts, last.Parts...)
		tool := wantsTool(req.Tools, lastParts) && !strings.Contains(string(lastParts[len(lastParts)-1]), "functionResponse")
		usage := fmt.Sprintf(`{"promptTokenCount":%d,"cachedContentTokenCount":%d,"candidatesTokenCount":%d,"thoughtsTokenCount":%d,"totalTokenCount":%d}`,
			GeminiPromptTokens, GeminiCachedTokens, GeminiCandidatesTokens, GeminiThoughtsTokens, GeminiPromptTokens+GeminiCandidatesTokens+GeminiThoughtsTokens)
		thought := ""
		if req.GenerationConfig.ThinkingConfig.IncludeThoughts {
			thought = `{"text":"Thinking it over.","thought":true},`
		}
		call := fmt.Sprintf(`{"functionCall":{"name":%q,"args":%s},"thoughtSignature":%q}`, WeatherToolName, WeatherToolArguments, GeminiThoughtSignature)
		chunk := func(parts, finish, usage string) string {
			s := `{"candidates":[{"content":{"role":"model","parts":[` + parts + `]},"index":0`
			if finish != "" {
				s += `,"finishReason":"` + finish + `"`
			}
			s += `}]`
			if usage != "" {
				s += `,"usageMetadata":` + usage
			}
			return s + `,"modelVersion":"gemini-fake","responseId":"fake-resp-1"}`
		}
		switch action {
		case "generateContent":
			w.Header().Set("Content-Type", "application/json")
			parts := thought + fmt.Sprintf(`{"text":%q}`, o.reply())
			if tool {
				parts = thought + call
			}
			_, _ = w.Write([]byte(chunk(parts, "STOP", usage)))
		case "streamGenerateContent":
			if r.URL.Query().Get("alt") != "sse" {
				fail(http.StatusBadRequest, "INVALID_ARGUMENT", "this fake streams SSE only")
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			if thought != "" {
				fmt.Fprintf(w, "data: %s\r\n\r\n", chunk(strings.TrimSuffix(thought, ","), "", ""))
				flush(w)
			}
			if tool {
				fmt.Fprintf(w, "data: %s\r\n\r\n", chunk(call, "STOP", usage))
				return
			}
			pieces := o.pieces()
			for k, piece := range pieces {
				finish, u := "", `{"promptTokenCount":21,"totalTokenCount":21}`
				if k == len(pieces)-1 {
					finish, u = "STOP", usage
				}
				fmt.Fprintf(w, "data: %s\r\n\r\n", chunk(fmt.Sprintf(`{"text":%q}`, piece), finish, u))
				flush(w)
			}
		default:
			fail(http.StatusNotFound, "NOT_FOUND", "no such method")
		}
	})
}

// geminiCount answers countTokens with the number of words in every text
// and description the request holds, so a test can tell which parts of
// its request were counted. Like Google it takes either bare contents or
// a generateContentRequest naming the same model as the path, not both.
func geminiCount(w http.ResponseWriter, body []byte, model string, fail func(int, string, string)) {
	var req struct {
		Contents json.RawMessage `json:"contents"`
		Wrapped  *struct {
			Model string `json:"model"`
		} `json:"generateContentRequest"`
	}
	if json.Unmarshal(body, &req) != nil || (req.Contents == nil) == (req.Wrapped == nil) {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "countTokens takes contents or generateContentRequest, exactly one")
		return
	}
	if req.Wrapped != nil && req.Wrapped.Model != "models/"+model {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "generateContentRequest.model must name the model of the path")
		return
	}
	var doc any
	_ = json.Unmarshal(body, &doc)
	w.Header().Set("Content-Type", "application/json")
	n := countWords(doc)
	fmt.Fprintf(w, `{"totalTokens":%d,"promptTokensDetails":[{"modality":"TEXT","tokenCount":%d}]}`, n, n)
}

func countWords(v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && (k == "text" || k == "description") {
				n += len(strings.Fields(s))
			} else {
				n += countWords(x)
			}
		}
	case []any:
		for _, x := range v {
			n += countWords(x)
		}
	}
	return n
}
