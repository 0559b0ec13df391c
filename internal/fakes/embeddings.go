package fakes

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
)

// Fixed token counts the fakes report for embeddings, and the vector every
// input gets (its index added to the first component, so inputs are told
// apart).
const (
	OpenAIEmbedTokens = 8
	OllamaEmbedTokens = 6
)

// FakeVector is the vector the fakes return for input i.
func FakeVector(i int) []float64 { return []float64{0.25 + float64(i), -0.5, 0.125} }

// openAIEmbeddings answers POST …/embeddings as OpenAI does, base64
// (little-endian float32) when asked.
func openAIEmbeddings(w http.ResponseWriter, body []byte) {
	var req struct {
		Model          string          `json:"model"`
		Input          json.RawMessage `json:"input"`
		EncodingFormat string          `json:"encoding_format"`
	}
	if json.Unmarshal(body, &req) != nil || req.Model == "" || len(req.Input) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"message":"bad embeddings request","type":"invalid_request_error","param":null,"code":null}}`))
		return
	}
	n := 1
	var texts []string
	var tokenLists [][]int
	if json.Unmarshal(req.Input, &texts) == nil {
		n = len(texts)
	} else if json.Unmarshal(req.Input, &tokenLists) == nil {
		n = len(tokenLists)
	}
	var data []string
	for i := 0; i < n; i++ {
		v := FakeVector(i)
		var emb string
		if req.EncodingFormat == "base64" {
			raw := make([]byte, 4*len(v))
			for j, f := range v {
				binary.LittleEndian.PutUint32(raw[4*j:], math.Float32bits(float32(f)))
			}
			emb = `"` + base64.StdEncoding.EncodeToString(raw) + `"`
		} else {
			b, _ := json.Marshal(v)
			emb = string(b)
		}
		data = append(data, fmt.Sprintf(`{"object":"embedding","index":%d,"embedding":%s}`, i, emb))
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"object":"list","data":[%s],"model":%q,"usage":{"prompt_tokens":%d,"total_tokens":%d}}`,
		strings.Join(data, ","), req.Model, OpenAIEmbedTokens, OpenAIEmbedTokens)
}

// ollamaEmbed answers POST /api/embed as Ollama does.
func ollamaEmbed(w http.ResponseWriter, body []byte) {
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if json.Unmarshal(body, &req) != nil || req.Model == "" || len(req.Input) == 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":"invalid input"}`))
		return
	}
	var vs [][]float64
	for i := range req.Input {
		vs = append(vs, FakeVector(i))
	}
	b, _ := json.Marshal(vs)
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"model":%q,"embeddings":%s,"total_duration":1000,"load_duration":10,"prompt_eval_count":%d}`, req.Model, b, OllamaEmbedTokens)
}

// geminiBatchEmbed answers batchEmbedContents as Google does (no usage).
func geminiBatchEmbed(w http.ResponseWriter, body []byte) {
	var req struct {
		Requests []struct {
			Model string `json:"model"`
		} `json:"requests"`
	}
	if json.Unmarshal(body, &req) != nil || len(req.Requests) == 0 || !strings.HasPrefix(req.Requests[0].Model, "models/") {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error":{"code":400,"message":"* BatchEmbedContentsRequest.requests: requests is not specified","status":"INVALID_ARGUMENT"}}`))
		return
	}
	var out []string
	for i := range req.Requests {
		b, _ := json.Marshal(FakeVector(i))
		out = append(out, `{"values":`+string(b)+`}`)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"embeddings":[%s]}`, strings.Join(out, ","))
}
