package providers

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// A Gemini batch is one upstream call: one model, one vector size. A
// request that asks otherwise is refused by name, not answered with the
// last request's size or another model's vectors.
func TestGeminiBatchEmbedIsOneCall(t *testing.T) {
	for _, tc := range []struct{ name, body, param string }{
		{"sizes differ", `{"requests":[{"content":{"parts":[{"text":"a"}]},"outputDimensionality":2},{"content":{"parts":[{"text":"b"}]},"outputDimensionality":3}]}`, "requests[1].outputDimensionality"},
		{"size on one only", `{"requests":[{"content":{"parts":[{"text":"a"}]}},{"content":{"parts":[{"text":"b"}]},"outputDimensionality":3}]}`, "requests[1].outputDimensionality"},
		{"another model", `{"requests":[{"model":"models/claude","content":{"parts":[{"text":"a"}]}}]}`, "requests[0].model"},
		{"size below 1", `{"requests":[{"content":{"parts":[{"text":"a"}]},"outputDimensionality":0}]}`, "requests[0].outputDimensionality"},
	} {
		_, err := ParseGeminiEmbedRequest([]byte(tc.body), "echo", true)
		apiErr, ok := err.(*APIError)
		if !ok || apiErr.Status != 400 || apiErr.Param != tc.param {
			t.Errorf("%s: %v, want a 400 naming %s", tc.name, err, tc.param)
		}
	}
	info, err := ParseGeminiEmbedRequest([]byte(`{"requests":[{"model":"models/echo","content":{"parts":[{"text":"a"}]},"outputDimensionality":8},{"model":"models/echo","content":{"parts":[{"text":"b"}]},"outputDimensionality":8}]}`), "echo", true)
	if err != nil || *info.embed().Dimensions != 8 || len(info.embed().Texts) != 2 {
		t.Fatalf("a uniform batch: %v %+v", err, info.embed())
	}
	resp := echoEmbeddings(mustRequest(t), []byte(`{"model":"echo","input":"x","dimensions":100000000}`))
	if body := readAll(t, resp); resp.StatusCode != 400 || !strings.Contains(body, "at most 4096") {
		t.Errorf("echo with 1e8 dimensions: %d %s", resp.StatusCode, body)
	}
}

func mustRequest(t *testing.T) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, "http://echo.modelgate.invalid/v1/embeddings", nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A wrongly typed field is named in the caller's terms, without Go's.
func TestDecodeErrorsNameTheField(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parse func() error
		param string
	}{
		{"gemini contents", func() error { _, err := ParseGeminiRequest([]byte(`{"contents":"hello"}`), "m", false); return err }, "contents"},
		{"embeddings encoding_format", func() error {
			_, err := ParseEmbeddingsRequest([]byte(`{"model":"m","input":"x","encoding_format":7}`))
			return err
		}, "encoding_format"},
		{"gemini embed outputDimensionality", func() error {
			_, err := ParseGeminiEmbedRequest([]byte(`{"content":{"parts":[{"text":"a"}]},"outputDimensionality":"big"}`), "m", false)
			return err
		}, "outputDimensionality"},
	} {
		apiErr, ok := tc.parse().(*APIError)
		if !ok || apiErr.Status != 400 || apiErr.Param != tc.param || strings.Contains(apiErr.Message, "Go struct") || strings.Contains(apiErr.Message, "providers.") {
			t.Errorf("%s: %+v", tc.name, apiErr)
		}
	}
}

// An upstream that answers fewer (or more) vectors than inputs is a bad
// answer, not a list the client would pair with the wrong texts.
func TestEmbeddingsVectorCountMustMatch(t *testing.T) {
	info, err := ParseEmbeddingsRequest([]byte(`{"model":"e","input":["a","b"]}`))
	if err != nil {
		t.Fatal(err)
	}
	info.embed().Alias = "e"
	rt := embedRoute(FormatEmbeddings, FormatOllama)
	_, _, err = rt.response([]byte(`{"embeddings":[[0.1,0.2]],"prompt_eval_count":2}`), info)
	if apiErr, ok := err.(*APIError); !ok || apiErr.Status != 502 || !strings.Contains(apiErr.Message, "1 embeddings for 2 inputs") {
		t.Errorf("one vector for two inputs: %v", err)
	}
	out, _, err := rt.response([]byte(`{"embeddings":[[0.1],[0.2]],"prompt_eval_count":2}`), info)
	if err != nil || !strings.Contains(string(out), `"index":1`) {
		t.Errorf("two for two: %v %s", err, out)
	}
}
