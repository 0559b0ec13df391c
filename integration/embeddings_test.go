package integration

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"google.golang.org/genai"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestEmbeddingsAgainstEveryBackend drives /v1/embeddings with the official
// OpenAI client (floats and base64) and Gemini's embedContent with the
// genai SDK against every backend kind with embeddings: an
// OpenAI-compatible server (passed through), Ollama (/api/embed), Gemini
// (batchEmbedContents) and echo/ (deterministic vectors); a Messages-only
// backend is a 400 naming the alias. Every request is in the ledger.
func TestEmbeddingsAgainstEveryBackend(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	grec := &fakes.Recorder{}
	gem := httptest.NewServer(fakes.Gemini(fakes.Options{}, grec))
	t.Cleanup(gem.Close)
	g := startGateway(t, gatewayConfig{models: strings.Replace(u.modelsYAML(), "model_aliases:", fmt.Sprintf(`  - model_name: gem
    proxy_params:
      model: gemini/text-embedding-fake
      api_base: %s
      api_key: %s
model_aliases:`, gem.URL, fakes.GeminiAPIKey), 1)})
	ctx := context.Background()
	oc := openaiClient(g, aliceKey)
	input := openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{"first text", "second text"}}

	for _, alias := range []string{"oa", "llama", "gem"} {
		t.Run(alias, func(t *testing.T) {
			resp, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: alias, Input: input})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Model != alias || len(resp.Data) != 2 || resp.Data[1].Index != 1 {
				t.Fatalf("answer %+v", resp)
			}
			for i, d := range resp.Data {
				want := fakes.FakeVector(i)
				if len(d.Embedding) != len(want) || d.Embedding[0] != want[0] || d.Embedding[1] != want[1] {
					t.Errorf("vector %d = %v, want %v", i, d.Embedding, want)
				}
			}
			want := map[string]int64{"oa": fakes.OpenAIEmbedTokens, "llama": fakes.OllamaEmbedTokens, "gem": 4}[alias]
			if resp.Usage.PromptTokens != want {
				t.Errorf("usage %+v, want %d prompt tokens", resp.Usage, want)
			}
		})
	}
	if last := u.ollamaRec.Last(); last.Path != "/api/embed" || !strings.Contains(string(last.Body), `"input":["first text","second text"]`) {
		t.Errorf("ollama got %s %s", last.Path, last.Body)
	}
	if last := grec.Last(); last.Path != "/v1beta/models/text-embedding-fake:batchEmbedContents" || last.Header.Get("X-Goog-Api-Key") != fakes.GeminiAPIKey {
		t.Errorf("gemini got %s", last.Path)
	}

	t.Run("base64", func(t *testing.T) {
		for _, alias := range []string{"oa", "llama", "echo"} {
			// The SDK decodes base64 back to floats; read the wire too.
			_, _, raw := g.do(t, "POST", "/v1/embeddings", aliceKey, `{"model":"`+alias+`","input":"x","encoding_format":"base64"}`)
			var b64 string
			if i := strings.Index(string(raw), `"embedding":"`); i >= 0 {
				b64 = string(raw)[i+len(`"embedding":"`):]
				b64 = b64[:strings.IndexByte(b64, '"')]
			}
			bin, err := base64.StdEncoding.DecodeString(b64)
			if err != nil || len(bin) == 0 || len(bin)%4 != 0 {
				t.Fatalf("%s: not base64 float32s: %s", alias, raw)
			}
			first := math.Float32frombits(binary.LittleEndian.Uint32(bin))
			if alias != "echo" && first != 0.25 {
				t.Errorf("%s: first component %v", alias, first)
			}
		}
	})
	t.Run("echo-deterministic", func(t *testing.T) {
		a, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "echo", Input: input, Dimensions: openai.Int(64)})
		if err != nil {
			t.Fatal(err)
		}
		b, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "echo", Input: input, Dimensions: openai.Int(64)})
		if err != nil {
			t.Fatal(err)
		}
		var norm float64
		for _, x := range a.Data[0].Embedding {
			norm += x * x
		}
		if len(a.Data[0].Embedding) != 64 || math.Abs(norm-1) > 1e-4 || a.Data[0].Embedding[3] != b.Data[0].Embedding[3] || a.Data[0].Embedding[3] == a.Data[1].Embedding[3] {
			t.Errorf("echo vectors: len %d norm %v", len(a.Data[0].Embedding), norm)
		}
	})
	t.Run("no-embeddings", func(t *testing.T) {
		var oe *openai.Error
		_, err := oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "claude", Input: input})
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusBadRequest || !strings.Contains(oe.Message, `"claude"`) {
			t.Errorf("anthropic alias: %v", err)
		}
		_, err = oc.Embeddings.New(ctx, openai.EmbeddingNewParams{Model: "nope", Input: input})
		if !errors.As(err, &oe) || oe.StatusCode != http.StatusNotFound {
			t.Errorf("unknown alias: %v", err)
		}
	})
	t.Run("gemini-client", func(t *testing.T) {
		gc := geminiClient(t, g, aliceKey)
		for _, alias := range []string{"echo", "oa", "gem"} {
			resp, err := gc.Models.EmbedContent(ctx, alias, []*genai.Content{genai.NewContentFromText("first text", genai.RoleUser),
				genai.NewContentFromText("second text", genai.RoleUser)}, &genai.EmbedContentConfig{OutputDimensionality: genai.Ptr[int32](8)})
			if err != nil {
				t.Fatal(alias, err)
			}
			if len(resp.Embeddings) != 2 || len(resp.Embeddings[0].Values) == 0 {
				t.Errorf("%s: %+v", alias, resp)
			}
		}
		_, err := gc.Models.EmbedContent(ctx, "claude", genai.Text("x"), nil)
		var ae genai.APIError
		if !errors.As(err, &ae) || ae.Code != http.StatusBadRequest || ae.Status != "INVALID_ARGUMENT" {
			t.Errorf("gemini client, anthropic alias: %v", err)
		}
	})

	g.stop(t)
	n := 0
	for _, rec := range g.ledgerRecords(t) {
		if rec.Endpoint == "embeddings" && rec.Status == 200 {
			n++
			if rec.InputTokens == 0 || rec.OutputTokens != 0 {
				t.Errorf("record %+v", rec)
			}
		}
	}
	if n != 3+3+2+3 {
		t.Errorf("%d embeddings records, want %d", n, 3+3+2+3)
	}
}
