package tokencount

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelgate/modelgate/providers"
)

// maxTokenizeResponse bounds what is read from a tokenize endpoint: a 32 MB
// prompt yields a token list well under this.
const maxTokenizeResponse = 64 << 20

// serverRoot derives a server's root URL from its OpenAI-style base: the
// tokenize routes of vLLM and llama.cpp live beside /v1, not under it.
func serverRoot(apiBase string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(apiBase))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New("tokenize: api_base must be an absolute http(s) URL")
	}
	u.RawQuery, u.Fragment = "", ""
	p := strings.TrimRight(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path, u.RawPath = p, ""
	return strings.TrimRight(u.String(), "/"), nil
}

// CountVLLM counts body with a vLLM server's own tokenizer and chat template:
// POST {root}/tokenize with the conversation as OpenAI chat messages and the
// client tools as functions; vLLM answers {"count": N, ...}. apiBase is the
// configured OpenAI-style base (…/v1). Images and PDFs, which are not sent,
// are added as CountOpenAI estimates them. The call is bounded by ctx. A bad
// body yields a 400 *providers.APIError; an error answer from the server a
// 502 one; a transport failure an error wrapping the cause (ctx's error
// included), so the caller can fall back to Counter.Estimate.
func CountVLLM(ctx context.Context, client *http.Client, apiBase string, header http.Header, model string, body []byte) (int, error) {
	p, err := parse(body)
	if err != nil {
		return 0, err
	}
	req := vllmTokenizeRequest{Model: model, Messages: p.openAIMessages(), AddGenerationPrompt: true}
	for _, t := range p.tools {
		if t.schema != nil {
			req.Tools = append(req.Tools, providers.OpenAITool{Type: "function", Function: providers.OpenAIFunction{
				Name: t.name, Description: t.description, Parameters: t.schema}})
		}
	}
	// A prefilled assistant turn is continued, not answered: vLLM refuses
	// both flags at once.
	if last := p.messages[len(p.messages)-1]; last.role == "assistant" {
		req.AddGenerationPrompt, req.ContinueFinalMessage = false, true
	}
	payload, err := json.Marshal(req)
	if err != nil {
		return 0, fmt.Errorf("vllm tokenize: encode request: %w", err)
	}
	var out struct {
		Count *int `json:"count"`
	}
	err = postTokenize(ctx, tokenizeServer{"vllm", client, apiBase, header}, payload, func(r io.Reader) error {
		return json.NewDecoder(r).Decode(&out)
	})
	if err != nil {
		return 0, err
	}
	if out.Count == nil {
		return 0, &providers.APIError{Status: http.StatusBadGateway, Message: "vllm tokenize: answer has no count"}
	}
	return *out.Count + p.extra(), nil
}

type vllmTokenizeRequest struct {
	Model                string                    `json:"model,omitempty"`
	Messages             []providers.OpenAIMessage `json:"messages"`
	Tools                []providers.OpenAITool    `json:"tools,omitempty"`
	AddGenerationPrompt  bool                      `json:"add_generation_prompt"`
	ContinueFinalMessage bool                      `json:"continue_final_message,omitempty"`
}

// CountLlamaCpp counts body with a llama.cpp server's tokenizer: POST
// {root}/tokenize {"content": text} answers {"tokens": [...]}. That endpoint
// applies no chat template, so the text is the conversation rendered as
// "role\ncontent" per message (tools as their function JSON), and the
// template's own tokens are approximated with the chat formula's framing (3
// per message, 3 for the reply). Images and PDFs are added as CountOpenAI
// estimates them. Errors are as for CountVLLM.
func CountLlamaCpp(ctx context.Context, client *http.Client, apiBase string, header http.Header, body []byte) (int, error) {
	p, err := parse(body)
	if err != nil {
		return 0, err
	}
	payload, err := json.Marshal(struct {
		Content    string `json:"content"`
		AddSpecial bool   `json:"add_special"`
	}{Content: p.render(), AddSpecial: true})
	if err != nil {
		return 0, fmt.Errorf("llama.cpp tokenize: encode request: %w", err)
	}
	var n int
	err = postTokenize(ctx, tokenizeServer{"llama.cpp", client, apiBase, header}, payload, func(r io.Reader) error {
		var cerr error
		n, cerr = countTokensArray(r)
		return cerr
	})
	if err != nil {
		return 0, err
	}
	return n + replyPriming + perMessage*len(p.messages) + p.extra(), nil
}

// tokenizeServer is the deployment a /tokenize call goes to.
type tokenizeServer struct {
	name    string // the server software, for errors: "vllm", "llama.cpp"
	client  *http.Client
	apiBase string
	// header is the deployment's own (credentials and extra_headers, as on
	// its chat requests); the key in it never reaches an error.
	header http.Header
}

// postTokenize sends payload to {root}/tokenize of s and hands a 200
// answer to decode.
func postTokenize(ctx context.Context, s tokenizeServer, payload []byte, decode func(io.Reader) error) error {
	client, server := s.client, s.name
	root, err := serverRoot(s.apiBase)
	if err != nil {
		return err
	}
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, root+"/tokenize", bytes.NewReader(payload))
	if err != nil {
		return fmt.Errorf("%s tokenize: %w", server, err)
	}
	for k, v := range s.header {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		// url.Error repeats the URL, which holds no secret; the cause keeps
		// context.DeadlineExceeded and friends reachable with errors.Is.
		return fmt.Errorf("%s tokenize: %w", server, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxTokenizeResponse)
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(body, 4096))
		up := providers.UpstreamError(resp.StatusCode, msg)
		return &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("%s tokenize: server answered %d: %s", server, resp.StatusCode, up.Message)}
	}
	if err := decode(body); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return fmt.Errorf("%s tokenize: %w", server, ctxErr)
		}
		return &providers.APIError{Status: http.StatusBadGateway,
			Message: fmt.Sprintf("%s tokenize: unreadable answer: %v", server, err)}
	}
	return nil
}

// countTokensArray counts the elements of the top-level "tokens" array
// without keeping them: ids, or {id, piece} objects when the server was asked
// for pieces.
func countTokensArray(r io.Reader) (int, error) {
	dec := json.NewDecoder(r)
	if t, err := dec.Token(); err != nil {
		return 0, err
	} else if d, ok := t.(json.Delim); !ok || d != '{' {
		return 0, errors.New("answer is not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return 0, err
		}
		var skip json.RawMessage
		if key, _ := t.(string); key != "tokens" {
			if err := dec.Decode(&skip); err != nil {
				return 0, err
			}
			continue
		}
		if t, err := dec.Token(); err != nil {
			return 0, err
		} else if d, ok := t.(json.Delim); !ok || d != '[' {
			return 0, errors.New("tokens is not an array")
		}
		n := 0
		for dec.More() {
			if err := dec.Decode(&skip); err != nil {
				return 0, err
			}
			n++
		}
		return n, nil
	}
	return 0, errors.New("answer has no tokens")
}

// extra sums the estimates for parts that are not sent as text.
func (p *prompt) extra() int {
	n := 0
	for _, m := range p.messages {
		n += m.extra
	}
	return n
}

// openAIMessages renders the prompt as chat-completions messages, text only.
func (p *prompt) openAIMessages() []providers.OpenAIMessage {
	out := make([]providers.OpenAIMessage, 0, len(p.messages))
	for _, m := range p.messages {
		content, _ := json.Marshal(m.text)
		om := providers.OpenAIMessage{Role: m.role, Content: content, ToolCallID: m.toolCallID}
		for _, tc := range m.toolCalls {
			om.ToolCalls = append(om.ToolCalls, providers.OpenAIToolCall{ID: tc.id, Type: "function",
				Function: providers.OpenAIFunctionCall{Name: tc.name, Arguments: string(tc.arguments)}})
		}
		out = append(out, om)
	}
	return out
}

// render is the prompt as plain text for a tokenizer without chat template.
func (p *prompt) render() string {
	var b strings.Builder
	for _, t := range p.tools {
		b.Write(t.countedJSON)
		b.WriteByte('\n')
	}
	for _, m := range p.messages {
		b.WriteString(m.role)
		b.WriteByte('\n')
		b.WriteString(m.text)
		for _, tc := range m.toolCalls {
			b.WriteByte('\n')
			b.WriteString(tc.name)
			b.Write(tc.arguments)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
