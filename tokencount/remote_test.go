package tokencount

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/providers"
)

const testKey = "sk-local-secret-123"

// bearer is a deployment header carrying key, as the gateway builds it.
func bearer(key string) http.Header {
	return http.Header{"Authorization": {"Bearer " + key}}
}

const convo = `{"model":"local-alias","system":"Be brief.","max_tokens":100,
	"messages":[{"role":"user","content":"List files"},
	{"role":"assistant","content":[{"type":"tool_use","id":"call_1","name":"ls","input":{"dir":"/tmp"}}]},
	{"role":"user","content":[{"type":"tool_result","tool_use_id":"call_1","content":"a.txt"},{"type":"image","source":{"type":"url","url":"https://example.com/x.png"}}]}],
	"tools":[{"name":"ls","description":"List a directory","input_schema":{"type":"object","properties":{"dir":{"type":"string"}}}},
	         {"type":"web_search_20250305","name":"web_search"}]}`

func TestServerRoot(t *testing.T) {
	tests := []struct{ base, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000"},
		{"http://127.0.0.1:8000/v1/", "http://127.0.0.1:8000"},
		{"http://localhost:8080", "http://localhost:8080"},
		{"https://gpu.lan/vllm/v1", "https://gpu.lan/vllm"},
		{"http://h:1/v1?x=1", "http://h:1"},
	}
	for _, tt := range tests {
		got, err := serverRoot(tt.base)
		if err != nil || got != tt.want {
			t.Errorf("serverRoot(%q) = %q, %v; want %q", tt.base, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "localhost:8000/v1", "ftp://h/v1", "http:///v1"} {
		if _, err := serverRoot(bad); err == nil {
			t.Errorf("serverRoot(%q) accepted", bad)
		}
	}
}

// TestCountVLLM counts against a server that answers like vLLM's
// /tokenize: {"count","max_model_len","tokens","token_strs"}, with a count
// that depends on the request so the test sees it was read.
func TestCountVLLM(t *testing.T) {
	var got vllmTokenizeRequest
	var gotAuth, gotPath string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		if err := json.NewDecoder(r.Body).Decode(&got); err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		count := 40 + len(got.Messages)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"count":`+itoa(count)+`,"max_model_len":32768,"tokens":[1,2,3],"token_strs":null}`)
	}))
	defer srv.Close()

	n, err := CountVLLM(context.Background(), srv.Client(), srv.URL+"/v1", bearer(testKey), "Qwen/Qwen3-8B", []byte(convo))
	if err != nil {
		t.Fatal(err)
	}
	if gotPath != "/tokenize" || gotAuth != "Bearer "+testKey {
		t.Errorf("path %q auth %q", gotPath, gotAuth)
	}
	if got.Model != "Qwen/Qwen3-8B" || !got.AddGenerationPrompt || got.ContinueFinalMessage {
		t.Errorf("request = %+v", got)
	}
	// system, user, assistant(tool call), tool, user(image only, empty text)
	roles := []string{}
	for _, m := range got.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,user" {
		t.Errorf("roles = %v", roles)
	}
	call := got.Messages[2].ToolCalls
	if len(call) != 1 || call[0].ID != "call_1" || call[0].Function.Name != "ls" || call[0].Function.Arguments != `{"dir":"/tmp"}` {
		t.Errorf("tool call = %+v", call)
	}
	if got.Messages[3].ToolCallID != "call_1" || string(got.Messages[3].Content) != `"a.txt"` {
		t.Errorf("tool message = %+v", got.Messages[3])
	}
	if len(got.Tools) != 1 || got.Tools[0].Function.Name != "ls" || string(got.Tools[0].Function.Parameters) != `{"type":"object","properties":{"dir":{"type":"string"}}}` {
		t.Errorf("tools = %+v", got.Tools)
	}
	if want := 40 + 5 + unknownImageTokens; n != want {
		t.Errorf("count = %d, want %d (server count plus image estimate)", n, want)
	}

	// A prefilled assistant turn is continued.
	prefill := `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello,"}]}`
	if _, err := CountVLLM(context.Background(), srv.Client(), srv.URL+"/v1", nil, "m", []byte(prefill)); err != nil {
		t.Fatal(err)
	}
	if got.AddGenerationPrompt || !got.ContinueFinalMessage || gotAuth != "" {
		t.Errorf("prefill request = %+v, auth %q", got, gotAuth)
	}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestCountLlamaCpp fakes llama.cpp's /tokenize: {"content"} in,
// {"tokens":[ids]} out, or [{"id","piece"}] with with_pieces.
func TestCountLlamaCpp(t *testing.T) {
	for _, withPieces := range []bool{false, true} {
		var content string
		var addSpecial bool
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			var req struct {
				Content    string `json:"content"`
				AddSpecial bool   `json:"add_special"`
			}
			if r.URL.Path != "/tokenize" || json.NewDecoder(r.Body).Decode(&req) != nil {
				http.Error(w, `{"error":{"code":400,"message":"bad","type":"invalid_request_error"}}`, 400)
				return
			}
			content, addSpecial = req.Content, req.AddSpecial
			// One token per whitespace-separated word: a stand-in tokenizer
			// whose answer the test can predict.
			var toks []any
			for i, w := range strings.Fields(req.Content) {
				if withPieces {
					toks = append(toks, map[string]any{"id": i, "piece": w})
				} else {
					toks = append(toks, i)
				}
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"tokens": toks})
		}))
		n, err := CountLlamaCpp(context.Background(), srv.Client(), srv.URL+"/v1/", bearer(testKey), []byte(convo))
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"system\nBe brief.", "user\nList files", "ls{\"dir\":\"/tmp\"}", "tool\na.txt", `"name":"ls"`, `"web_search_20250305"`} {
			if !strings.Contains(content, want) {
				t.Errorf("content lacks %q:\n%s", want, content)
			}
		}
		if !addSpecial {
			t.Error("add_special not set")
		}
		words := len(strings.Fields(content))
		if want := words + 3 + 3*5 + unknownImageTokens; n != want {
			t.Errorf("pieces=%v: count = %d, want %d", withPieces, n, want)
		}
	}
}

func TestTokenizeErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/bad/tokenize":
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"object":"error","message":"The model `+"`x`"+` does not exist.","type":"NotFoundError","code":404}`)
		case "/garbage/tokenize":
			_, _ = io.WriteString(w, `<html>`)
		case "/nocount/tokenize":
			_, _ = io.WriteString(w, `{"tokens":[]}`)
		}
	}))
	defer srv.Close()
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	for _, path := range []string{"/bad/v1", "/garbage/v1", "/nocount/v1"} {
		_, err := CountVLLM(context.Background(), srv.Client(), srv.URL+path, bearer(testKey), "x", body)
		var apiErr *providers.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway {
			t.Errorf("%s: err = %v, want a 502 APIError", path, err)
			continue
		}
		if strings.Contains(err.Error(), testKey) {
			t.Errorf("%s: error leaks the key: %v", path, err)
		}
	}
	// An empty token list is a valid answer: only the framing remains.
	n, err := CountLlamaCpp(context.Background(), srv.Client(), srv.URL+"/nocount/v1", bearer(testKey), body)
	if err != nil || n != 3+3 {
		t.Errorf("empty tokens: %d, %v; want 6", n, err)
	}
	_, err = CountLlamaCpp(context.Background(), srv.Client(), srv.URL+"/garbage/v1", bearer(testKey), body)
	var apiErr *providers.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway {
		t.Errorf("garbage: err = %v", err)
	}

	// A bad body is the client's 400, before any request.
	_, err = CountVLLM(context.Background(), srv.Client(), srv.URL+"/v1", bearer(testKey), "x", []byte(`{"model":"m"}`))
	if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Param != "messages" {
		t.Errorf("bad body: %v", err)
	}

	// Nothing listening: a transport error that does not carry the key.
	closed := httptest.NewServer(http.NotFoundHandler())
	url := closed.URL
	closed.Close()
	_, err = CountLlamaCpp(context.Background(), nil, url+"/v1", bearer(testKey), body)
	if err == nil || strings.Contains(err.Error(), testKey) {
		t.Errorf("refused: err = %v", err)
	}
}

func TestTokenizeHonoursContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer srv.Close()
	defer close(release)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	for name, call := range map[string]func(context.Context) error{
		"vllm": func(ctx context.Context) error {
			_, err := CountVLLM(ctx, srv.Client(), srv.URL+"/v1", bearer(testKey), "m", body)
			return err
		},
		"llama.cpp": func(ctx context.Context) error {
			_, err := CountLlamaCpp(ctx, srv.Client(), srv.URL+"/v1", bearer(testKey), body)
			return err
		},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := call(ctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: err = %v, want context.DeadlineExceeded", name, err)
		}
	}
}
