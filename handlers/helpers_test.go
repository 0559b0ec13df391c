package handlers

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// fault is what one fake upstream does with request number n (from 1).
type fault func(w http.ResponseWriter, r *http.Request, n int64)

// fakeUpstream is an OpenAI chat-completions server whose behaviour a
// test chooses per request. It counts requests and notes when the gateway
// gave up on one (the request context ends when the connection closes).
type fakeUpstream struct {
	srv     *httptest.Server
	hits    atomic.Int64
	aborted chan struct{} // one value per request whose connection the gateway closed
	name    string
}

func newFakeUpstream(t *testing.T, name string, f fault) *fakeUpstream {
	t.Helper()
	u := &fakeUpstream{aborted: make(chan struct{}, 64), name: name}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// The gateway forwards the client's stream flag; the fake keys its
		// answer's shape on it.
		r.Header.Del("X-Test-Stream")
		if strings.Contains(string(body), `"stream":true`) {
			r.Header.Set("X-Test-Stream", "1")
		}
		n := u.hits.Add(1)
		if f == nil {
			okAnswer(name)(w, r, n)
			return
		}
		f(w, r, n)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// waitAborted waits for the gateway to close an upstream request.
func (u *fakeUpstream) waitAborted(t *testing.T) {
	t.Helper()
	select {
	case <-u.aborted:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the gateway did not close the upstream request", u.name)
	}
}

// hold blocks until the gateway closes the request, then reports it.
func (u *fakeUpstream) hold(r *http.Request) {
	<-r.Context().Done()
	u.aborted <- struct{}{}
}

func reply(name string) string { return "hello from " + name }

// okAnswer answers in OpenAI's format, streamed or not as asked.
func okAnswer(name string) fault {
	return func(w http.ResponseWriter, r *http.Request, n int64) { writeOpenAI(w, r, name) }
}

func streaming(r *http.Request) bool { return r.Header.Get("X-Test-Stream") == "1" }

// writeOpenAI answers with the fake's reply.
func writeOpenAI(w http.ResponseWriter, r *http.Request, name string) {
	if streaming(r) {
		streamStart(w, reply(name))
		streamChunk(w, "", true)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, reply(name))
}

// streamStart sends headers and the first content chunk.
func streamStart(w http.ResponseWriter, content string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":null}]}\n\n", content)
	_ = http.NewResponseController(w).Flush()
}

// streamChunk sends more content, or the finish, usage and [DONE].
func streamChunk(w http.ResponseWriter, content string, last bool) {
	if last {
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	} else {
		fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", content)
	}
	_ = http.NewResponseController(w).Flush()
}

// statusAnswer fails with status and an OpenAI error body.
func statusAnswer(status int, retryAfter string) fault {
	return func(w http.ResponseWriter, r *http.Request, n int64) {
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"fake %d","type":"server_error","param":null,"code":null}}`, status)
	}
}

// resetConn closes the TCP connection with an RST and no answer.
func resetConn(w http.ResponseWriter, r *http.Request, n int64) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(err)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// closedPortURL is a loopback address nobody listens on.
func closedPortURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return "http://" + addr
}

// recorder is an Observer and Recorder that keeps everything.
type recorder struct {
	mu       sync.Mutex
	attempts []Attempt
	done     []ledger.Record
}

func (o *recorder) Attempt(a Attempt) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.attempts = append(o.attempts, a)
}

func (o *recorder) Done(rec *ledger.Record) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.done = append(o.done, *rec)
}

func (o *recorder) Enqueue(ledger.Record) bool { return true }

func (o *recorder) Attempts() []Attempt {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Attempt(nil), o.attempts...)
}

func (o *recorder) Records() []ledger.Record {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]ledger.Record(nil), o.done...)
}

// testGateway builds a gateway on a models YAML.
func testGateway(t testing.TB, yaml string, edit func(*GatewayOptions)) (*Gateway, *recorder) {
	t.Helper()
	cfg, _, err := modellist.Parse([]byte(yaml), "models.yaml", func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatalf("models: %v", err)
	}
	obs := &recorder{}
	o := GatewayOptions{Models: cfg, Observer: obs, Recorder: obs}
	if edit != nil {
		edit(&o)
	}
	g := NewGateway(o)
	t.Cleanup(g.Close)
	return g, obs
}

// entry is one model_list item for an OpenAI-compatible fake.
func entry(alias, base string, extra ...string) string {
	return kindEntry(alias, "openai/m", base, extra...)
}

// kindEntry is one model_list entry of any kind at the fake's base; an
// OpenAI-compatible base gets its /v1.
func kindEntry(alias, kind, base string, extra ...string) string {
	if strings.HasPrefix(kind, "openai/") {
		base += "/v1"
	}
	s := fmt.Sprintf("  - model_name: %s\n    proxy_params:\n      model: %s\n      api_base: %s\n      api_key: sk-upstream-secret\n", alias, kind, base)
	for _, e := range extra {
		s += "      " + e + "\n"
	}
	return s
}

var alice = &policy.Identity{KeyID: "alice", Role: policy.RoleUser}

// chatBody is an OpenAI chat request for alias.
func chatBody(alias string, stream bool) string {
	return fmt.Sprintf(`{"model":%q,"stream":%v,"messages":[{"role":"user","content":"hi"}]}`, alias, stream)
}

// post sends a chat request straight to the handler.
func post(g *Gateway, id *policy.Identity, path, body string, hdr ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if id != nil {
		req = req.WithContext(policy.WithIdentity(req.Context(), id))
	}
	rec := httptest.NewRecorder()
	g.ServeHTTP(rec, req)
	return rec
}

// content is the assistant text of a non-streamed OpenAI answer.
func content(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(body, &v); err != nil || len(v.Choices) == 0 {
		t.Fatalf("not a chat completion: %s", body)
	}
	return v.Choices[0].Message.Content
}

// errMessage is the message of an OpenAI error body.
func errMessage(t *testing.T, body []byte) string {
	t.Helper()
	var v struct {
		Error struct{ Message string } `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("not an error body: %s", body)
	}
	return v.Error.Message
}
