package providers

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"

	"github.com/modelgate/modelgate/internal/jsonfast"
)

// Embeddings: OpenAI's POST /v1/embeddings (and Gemini's embedContent /
// batchEmbedContents) routed by alias like chat. OpenAI-compatible
// upstreams take the body as sent, Ollama is asked on /api/embed, Gemini
// on batchEmbedContents, echo/ makes deterministic vectors; Messages-only
// backends have no embeddings and say so.

// EmbedTurn is one embeddings request parsed once.
type EmbedTurn struct {
	// Texts are the inputs as text; nil when the client sent token ids,
	// which only OpenAI-compatible upstreams take (as sent).
	Texts      []string
	Base64     bool
	Dimensions *int64
	// Gemini: the client is Gemini's API; Batch: batchEmbedContents.
	Gemini, Batch bool
	// Alias names the model in answers and messages.
	Alias string
}

type openAIEmbedRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	EncodingFormat string          `json:"encoding_format"`
	Dimensions     *int64          `json:"dimensions"`
	User           string          `json:"user"`
}

// ParseEmbeddingsRequest reads an OpenAI embeddings body.
func ParseEmbeddingsRequest(body []byte) (RequestInfo, error) {
	if !jsonfast.Valid(body) {
		return RequestInfo{}, invalidJSON(body)
	}
	var req openAIEmbedRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return RequestInfo{}, decodeError(err)
	}
	if req.Model == "" {
		return RequestInfo{}, BadRequest("model", "you must provide a model parameter")
	}
	t := &EmbedTurn{Dimensions: req.Dimensions}
	switch req.EncodingFormat {
	case "", "float":
	case "base64":
		t.Base64 = true
	default:
		return RequestInfo{}, BadRequest("encoding_format", `encoding_format must be "float" or "base64"`)
	}
	if req.Dimensions != nil && *req.Dimensions < 1 {
		return RequestInfo{}, BadRequest("dimensions", "dimensions must be a positive integer")
	}
	in := bytes.TrimSpace(req.Input)
	var one string
	var many []string
	var tokens [][]int64
	var oneTokens []int64
	switch {
	case len(in) == 0 || string(in) == "null":
		return RequestInfo{}, BadRequest("input", "you must provide input: a string, a list of strings, or token ids")
	case json.Unmarshal(in, &one) == nil:
		t.Texts = []string{one}
	case json.Unmarshal(in, &many) == nil:
		t.Texts = many
	case json.Unmarshal(in, &oneTokens) == nil:
		if len(oneTokens) == 0 {
			return RequestInfo{}, BadRequest("input", "input must not be empty")
		}
	case json.Unmarshal(in, &tokens) == nil:
		if len(tokens) == 0 {
			return RequestInfo{}, BadRequest("input", "input must not be empty")
		}
	default:
		return RequestInfo{}, BadRequest("input", "input must be a string, a list of strings, a list of token ids or a list of such lists")
	}
	if t.Texts != nil {
		if len(t.Texts) == 0 {
			return RequestInfo{}, BadRequest("input", "input must not be empty")
		}
		for i, s := range t.Texts {
			if s == "" {
				return RequestInfo{}, BadRequest(fmt.Sprintf("input[%d]", i), "input strings must not be empty")
			}
		}
	}
	return RequestInfo{Model: req.Model, Turn: t}, nil
}

// ParseGeminiEmbedRequest reads embedContent ({"content":…}) or
// batchEmbedContents ({"requests":[…]}) for the model in the URL.
func ParseGeminiEmbedRequest(body []byte, model string, batch bool) (RequestInfo, error) {
	if !jsonfast.Valid(body) {
		return RequestInfo{}, invalidJSON(body)
	}
	type one struct {
		Model                string         `json:"model"`
		Content              *geminiContent `json:"content"`
		OutputDimensionality *int64         `json:"outputDimensionality"`
	}
	var reqs []one
	if batch {
		var b struct {
			Requests []one `json:"requests"`
		}
		if err := json.Unmarshal(body, &b); err != nil {
			return RequestInfo{}, decodeError(err)
		}
		reqs = b.Requests
	} else {
		var o one
		if err := json.Unmarshal(body, &o); err != nil {
			return RequestInfo{}, decodeError(err)
		}
		reqs = []one{o}
	}
	if len(reqs) == 0 {
		return RequestInfo{}, BadRequest("requests", "* BatchEmbedContentsRequest.requests: requests is not specified")
	}
	t := &EmbedTurn{Gemini: true, Batch: batch}
	for i, r := range reqs {
		if r.Content == nil {
			return RequestInfo{}, BadRequest(fmt.Sprintf("requests[%d].content", i), "content is not specified")
		}
		var text []byte
		for _, p := range r.Content.Parts {
			text = append(text, p.Text...)
		}
		if len(text) == 0 {
			return RequestInfo{}, BadRequest(fmt.Sprintf("requests[%d].content", i), "content must hold text to embed")
		}
		t.Texts = append(t.Texts, string(text))
		at := fmt.Sprintf("requests[%d]", i)
		if !batch {
			at = ""
		}
		// The batch is one upstream call, for the URL's model and one size.
		if r.Model != "" && r.Model != "models/"+model && r.Model != model {
			return RequestInfo{}, BadRequest(paramPath(at, "model"), fmt.Sprintf("%q is not the model of the URL (models/%s); a batch embeds with one model", r.Model, model))
		}
		if d := r.OutputDimensionality; d != nil && *d < 1 {
			return RequestInfo{}, BadRequest(paramPath(at, "outputDimensionality"), "outputDimensionality must be a positive integer")
		}
		switch {
		case i == 0:
			t.Dimensions = r.OutputDimensionality
		case (r.OutputDimensionality == nil) != (t.Dimensions == nil) || (t.Dimensions != nil && *r.OutputDimensionality != *t.Dimensions):
			return RequestInfo{}, BadRequest(paramPath(at, "outputDimensionality"), "every request of a batch must ask for the same outputDimensionality; send different sizes in separate batches")
		}
	}
	return RequestInfo{Model: model, Turn: t}, nil
}

// openAIBody is the turn as an OpenAI embeddings body for model.
func (t *EmbedTurn) openAIBody(model string) []byte {
	b, _ := json.Marshal(struct {
		Model      string   `json:"model"`
		Input      []string `json:"input"`
		Dimensions *int64   `json:"dimensions,omitempty"`
	}{model, t.Texts, t.Dimensions})
	return b
}

// answer writes vectors in the client's shape: OpenAI's list (floats or
// base64 of little-endian float32, as OpenAI encodes them) or Gemini's.
func (t *EmbedTurn) answer(vectors [][]float64, promptTokens int64) []byte {
	if t.Gemini {
		type values struct {
			Values []float64 `json:"values"`
		}
		if !t.Batch {
			v := values{Values: []float64{}}
			if len(vectors) > 0 {
				v.Values = vectors[0]
			}
			b, _ := json.Marshal(struct {
				Embedding values `json:"embedding"`
			}{v})
			return b
		}
		out := struct {
			Embeddings []values `json:"embeddings"`
		}{Embeddings: make([]values, len(vectors))}
		for i, v := range vectors {
			out.Embeddings[i] = values{v}
		}
		b, _ := json.Marshal(out)
		return b
	}
	dst := append([]byte(nil), `{"object":"list","data":[`...)
	for i, v := range vectors {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"object":"embedding","index":`...)
		dst = strconv.AppendInt(dst, int64(i), 10)
		dst = append(dst, `,"embedding":`...)
		if t.Base64 {
			raw := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(f)))
			}
			dst = append(dst, '"')
			dst = base64.StdEncoding.AppendEncode(dst, raw)
			dst = append(dst, '"')
		} else {
			dst = append(dst, '[')
			for j, f := range v {
				if j > 0 {
					dst = append(dst, ',')
				}
				dst = strconv.AppendFloat(dst, f, 'g', -1, 32)
			}
			dst = append(dst, ']')
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `],"model":`...)
	dst = jsonfast.AppendJSONString(dst, t.Alias)
	dst = append(dst, `,"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, promptTokens, 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, promptTokens, 10)
	return append(dst, "}}"...)
}

// answerAll answers with an upstream's vectors, one per input: clients
// pair inputs and vectors by position, so a short or long list would
// silently give texts the wrong vectors.
func (t *EmbedTurn) answerAll(vectors [][]float64, u Usage) ([]byte, Usage, error) {
	if len(vectors) != len(t.Texts) {
		return nil, u, &APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("model %q: upstream returned %d embeddings for %d inputs", t.Alias, len(vectors), len(t.Texts))}
	}
	return t.answer(vectors, u.InputTokens), u, nil
}

// estimateTokens stands in for upstreams that count nothing (Gemini's
// embed calls): a token per 4 bytes, as the echo backend counts.
func (t *EmbedTurn) estimateTokens() int64 {
	var n int64
	for _, s := range t.Texts {
		n += max(1, int64(len(s))/4)
	}
	return n
}

// embedRoute is the embeddings route of a client (OpenAI's or Gemini's
// embeddings) to an upstream format.
func embedRoute(client, upstream Format) Route {
	r := Route{Client: client, Upstream: upstream}
	r.stream = func(string, RequestInfo, bool) StreamTranslator { return nil }
	switch upstream {
	case FormatOpenAI:
		r.request = func(body []byte, info RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			if !info.embed().Gemini {
				out, err := RewriteModel(body, model)
				return out, false, err
			}
			return info.embed().openAIBody(model), false, nil
		}
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			var a struct {
				Usage struct {
					PromptTokens int64 `json:"prompt_tokens"`
				} `json:"usage"`
				Data []struct {
					Embedding json.RawMessage `json:"embedding"`
				} `json:"data"`
			}
			if !looksLikeObject(raw) || json.Unmarshal(raw, &a) != nil {
				return nil, Usage{}, ErrNotJSONObject
			}
			u := Usage{InputTokens: a.Usage.PromptTokens, Seen: true}
			if !info.embed().Gemini {
				// As the upstream wrote it (its encoding included), named by the alias.
				out, err := RewriteModel(raw, info.embed().Alias)
				return out, u, err
			}
			vectors := make([][]float64, len(a.Data))
			for i, d := range a.Data {
				if json.Unmarshal(d.Embedding, &vectors[i]) != nil {
					return nil, u, &APIError{Status: http.StatusBadGateway, Message: "the upstream's embedding is not a list of numbers"}
				}
			}
			return info.embed().answerAll(vectors, u)
		}
	case FormatOllama:
		r.request = func(_ []byte, info RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			if info.embed().Texts == nil {
				return nil, false, BadRequest("input", "this model takes text input, not token ids")
			}
			b, _ := json.Marshal(struct {
				Model      string   `json:"model"`
				Input      []string `json:"input"`
				Dimensions *int64   `json:"dimensions,omitempty"`
			}{model, info.embed().Texts, info.embed().Dimensions})
			return b, false, nil
		}
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			var a struct {
				Embeddings      [][]float64 `json:"embeddings"`
				PromptEvalCount int64       `json:"prompt_eval_count"`
			}
			if !looksLikeObject(raw) || json.Unmarshal(raw, &a) != nil {
				return nil, Usage{}, ErrNotJSONObject
			}
			return info.embed().answerAll(a.Embeddings, Usage{InputTokens: a.PromptEvalCount, Seen: true})
		}
	case FormatGemini:
		r.request = func(_ []byte, info RequestInfo, model string, _ RouteOptions) ([]byte, bool, error) {
			if info.embed().Texts == nil {
				return nil, false, BadRequest("input", "this model takes text input, not token ids")
			}
			type req struct {
				Model                string        `json:"model"`
				Content              geminiContent `json:"content"`
				OutputDimensionality *int64        `json:"outputDimensionality,omitempty"`
			}
			var b struct {
				Requests []req `json:"requests"`
			}
			for _, s := range info.embed().Texts {
				b.Requests = append(b.Requests, req{Model: "models/" + model, Content: geminiContent{Parts: []geminiPart{{Text: s}}},
					OutputDimensionality: info.embed().Dimensions})
			}
			out, _ := json.Marshal(b)
			return out, false, nil
		}
		r.response = func(raw []byte, info RequestInfo) ([]byte, Usage, error) {
			var a struct {
				Embeddings []struct {
					Values []float64 `json:"values"`
				} `json:"embeddings"`
			}
			if !looksLikeObject(raw) || json.Unmarshal(raw, &a) != nil {
				return nil, Usage{}, ErrNotJSONObject
			}
			vectors := make([][]float64, len(a.Embeddings))
			for i, e := range a.Embeddings {
				vectors[i] = e.Values
			}
			// Gemini's embed answers count nothing: the ledger gets an estimate.
			return info.embed().answerAll(vectors, Usage{InputTokens: info.embed().estimateTokens(), Seen: true})
		}
	default:
		r.request = func(_ []byte, info RequestInfo, _ string, _ RouteOptions) ([]byte, bool, error) {
			return nil, false, BadRequest("model", fmt.Sprintf("model %q has no embeddings: its backend speaks %s, which has no embeddings API; use an alias on an OpenAI-compatible, Ollama, Gemini or echo backend", info.embed().Alias, upstream))
		}
		r.response = func([]byte, RequestInfo) ([]byte, Usage, error) {
			return nil, Usage{}, &APIError{Status: http.StatusBadRequest, Message: "no embeddings on this backend"}
		}
	}
	return r
}

// paramPath is a parameter path: "requests[1]" and "model" make
// "requests[1].model"; an empty prefix leaves the name alone.
func paramPath(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}
