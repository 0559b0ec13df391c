package handlers

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
)

// Gemini's native API: generateContent, streamGenerateContent, countTokens
// and the models list, for Gemini CLI and the google-genai SDKs, routed by
// alias through the translation hub like every other client format
// (docs/architecture.md, "The translation matrix and the hub").

// geminiAction splits /v1beta/models/{model}:{action} (or /v1/..., which
// a client sets with GOOGLE_GENAI_API_VERSION=v1). The model is what lies
// between "models/" and the last colon; it may hold slashes.
func geminiAction(p string) (model, action string, ok bool) {
	var rest string
	switch {
	case strings.HasPrefix(p, "/v1beta/models/"):
		rest = p[len("/v1beta/models/"):]
	case strings.HasPrefix(p, "/v1/models/"):
		rest = p[len("/v1/models/"):]
	default:
		return "", "", false
	}
	i := strings.LastIndexByte(rest, ':')
	if i < 0 {
		return "", "", false
	}
	// i == 0 is an action with no model: the call, refused as naming none.
	return rest[:i], rest[i+1:], true
}

// geminiCall reports whether r is a call of a Gemini action. An alias may
// hold a colon itself (Ollama's "llama3:8b"): under /v1/ only Gemini's own
// actions count, so GET /v1/models/llama3:8b names the model; under
// /v1beta/ a GET is a model's lookup and any other method an action
// (unknown ones get Google's 404).
func geminiCall(r *http.Request) bool {
	_, action, ok := geminiAction(r.URL.Path)
	if !ok {
		return false
	}
	return geminiMethod(action) || strings.HasPrefix(r.URL.Path, "/v1beta/") && r.Method != http.MethodGet && r.Method != http.MethodHead
}

// geminiMethod reports whether action is one the gateway serves.
func geminiMethod(action string) bool {
	switch action {
	case "generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents":
		return true
	}
	return false
}

// geminiModelsOnV1 reports a Gemini client listing or looking up models on
// the /v1 API version (@google/genai 3.x's default): GET /v1/models or
// /v1/models/{alias} with its key in x-goog-api-key or ?key=, and none of
// another client's marks (a Bearer token, x-api-key, anthropic-version).
// It gets Google's shapes, as on /v1beta; OpenAI's list would read as an
// empty one to it.
func geminiModelsOnV1(r *http.Request) bool {
	p := r.URL.Path
	if p != "/v1/models" && !strings.HasPrefix(p, "/v1/models/") || geminiCall(r) {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false // the models route answers other methods its 405
	}
	h := r.Header
	if h.Get("Authorization") != "" || h.Get("X-Api-Key") != "" || h.Get("Anthropic-Version") != "" {
		return false
	}
	return h.Get("X-Goog-Api-Key") != "" || r.URL.RawQuery != "" && r.URL.Query().Has("key")
}

func (g *Gateway) serveGemini(w http.ResponseWriter, r *http.Request) {
	_, action, _ := geminiAction(r.URL.Path)
	if !geminiMethod(action) {
		g.serveNotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		(&providers.APIError{Status: http.StatusMethodNotAllowed,
			Message: "method " + r.Method + " not allowed on " + r.URL.Path + "; use POST"}).Write(w, providers.FormatGemini)
		return
	}
	switch action {
	case "streamGenerateContent":
		if r.URL.Query().Get("alt") != "sse" {
			(&providers.APIError{Status: http.StatusBadRequest, Param: "alt",
				Message: "streamGenerateContent is served as server-sent events only: add ?alt=sse (every google-genai SDK does)"}).Write(w, providers.FormatGemini)
			return
		}
		g.serveHTTP(w, r, providers.FormatGemini)
	case "generateContent":
		g.serveHTTP(w, r, providers.FormatGemini)
	case "countTokens":
		g.serveGeminiCount(w, r)
	case "embedContent", "batchEmbedContents":
		g.serveHTTP(w, r, providers.FormatGeminiEmbed)
	}
}

// serveGeminiCount answers countTokens as count_tokens counts.
func (g *Gateway) serveGeminiCount(w http.ResponseWriter, r *http.Request) {
	g.serveCount(w, r, providers.FormatGemini)
}

// serveGeminiModels answers GET /v1beta/models (paged with pageSize and
// pageToken, the token being the offset) and GET /v1beta/models/{alias},
// and the same on /v1 for a Gemini client (geminiModelsOnV1).
func (g *Gateway) serveGeminiModels(w http.ResponseWriter, r *http.Request) {
	aliases := g.allowedAliases(policy.IdentityFrom(r.Context()))
	p, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models")
	if !ok {
		p = strings.TrimPrefix(r.URL.Path, "/v1/models")
	}
	if p != "" && p != "/" {
		alias := p[1:]
		if _, ok := g.backends[alias]; !ok || !policy.IdentityFrom(r.Context()).Allows(alias) {
			(&providers.APIError{Status: http.StatusNotFound,
				Message: "models/" + alias + " is not found on this gateway, or this key may not use it; GET /v1beta/models lists the models it may use"}).Write(w, providers.FormatGemini)
			return
		}
		writeJSON(w, http.StatusOK, providers.GeminiModel(alias, g.embeds(alias)))
		return
	}
	q := r.URL.Query()
	size := 50
	if s := q.Get("pageSize"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			(&providers.APIError{Status: http.StatusBadRequest, Param: "pageSize", Message: "pageSize must be a positive integer"}).Write(w, providers.FormatGemini)
			return
		}
		size = min(n, 1000)
	}
	from := 0
	if s := q.Get("pageToken"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > len(aliases) {
			(&providers.APIError{Status: http.StatusBadRequest, Param: "pageToken", Message: "pageToken is not one this gateway gave"}).Write(w, providers.FormatGemini)
			return
		}
		from = n
	}
	to := min(from+size, len(aliases))
	next := ""
	if to < len(aliases) {
		next = strconv.Itoa(to)
	}
	writeJSON(w, http.StatusOK, providers.GeminiModels(aliases[from:to], g.embeds, next))
}

// embeds reports whether the alias's first deployment serves embeddings.
func (g *Gateway) embeds(alias string) bool {
	bs := g.backends[alias]
	return len(bs) > 0 && bs[0].Embeddings()
}
