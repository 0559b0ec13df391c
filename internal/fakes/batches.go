package fakes

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// BatchAPI fakes one provider account's batch APIs in their real shapes:
// Anthropic's Message Batches (/v1/messages/batches…, base URL without
// /v1) and OpenAI's Files + Batch (/v1/files…, /v1/batches…, base URL
// with /v1). It accepts only Key (x-api-key with anthropic-version, or
// Authorization: Bearer), answers every request of a batch with
// DefaultReply and 10 input, 5 output tokens, a request whose custom_id
// starts with "err" with an error, and keeps a batch in progress until
// Finish (Hold) or its first poll.
type BatchAPI struct {
	Key string
	// Hold keeps batches in progress until Finish.
	Hold bool
	// Reply is every succeeded answer's text; empty: DefaultReply.
	Reply string

	mu       sync.Mutex
	seq      int
	batches  map[string]*fakeBatch
	files    map[string][]byte
	models   []string
	last     []byte // the last batch's requests as sent
	creates  int
	badAuths int
	usage    json.RawMessage // Message Batches answers' usage; nil: 10 in, 5 out
}

type fakeBatch struct {
	api, endpoint, inputFile string
	ids                      []string
	models                   []string
	state                    string // in_progress, canceling, ended
	canceled                 bool
	polls                    int
	created                  time.Time
	outFile, errFile         string
}

// Creates is how many batches were created; BadAuths how many calls
// came with another credential.
func (f *BatchAPI) Creates() (creates, badAuths int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.creates, f.badAuths
}

// Last is the last batch's requests as they were sent: the Message
// Batches create body, or the uploaded JSONL file.
func (f *BatchAPI) Last() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]byte(nil), f.last...)
}

// Models are the models the batches' requests named, in order.
func (f *BatchAPI) Models() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.models...)
}

// SetKey changes the credential the fake accepts (a key rotated
// upstream).
func (f *BatchAPI) SetKey(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.Key = key
}

// SetAnthropicUsage sets the usage object Message Batches answers carry
// from now on (cache writes by TTL, server tool use).
func (f *BatchAPI) SetAnthropicUsage(usage string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usage = json.RawMessage(usage)
}

// Finish ends every batch in progress.
func (f *BatchAPI) Finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.batches {
		if b.state != "ended" {
			f.endLocked(b)
		}
	}
}

func (f *BatchAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.batches == nil {
		f.batches, f.files = map[string]*fakeBatch{}, map[string][]byte{}
	}
	p := r.URL.Path
	anthropic := strings.HasPrefix(p, "/v1/messages/batches")
	ok := r.Header.Get("Authorization") == "Bearer "+f.Key
	if anthropic {
		ok = r.Header.Get("X-Api-Key") == f.Key && r.Header.Get("Anthropic-Version") != ""
	}
	if !ok {
		f.badAuths++
		http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, http.StatusUnauthorized)
		return
	}
	rest := strings.Trim(strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(p, "/v1/messages/batches"), "/v1/batches"), "/v1/files"), "/")
	id, action, _ := strings.Cut(rest, "/")
	switch {
	case anthropic && r.Method == http.MethodPost && id == "":
		f.createAnthropic(w, r)
	case r.Method == http.MethodDelete:
		f.forget(w, strings.HasPrefix(p, "/v1/files"), id)
	case strings.HasPrefix(p, "/v1/files") && r.Method == http.MethodPost:
		f.upload(w, r)
	case strings.HasPrefix(p, "/v1/files") && action == "content":
		content, ok := f.files[id]
		if !ok {
			http.Error(w, `{"error":{"message":"no such file"}}`, http.StatusNotFound)
			return
		}
		_, _ = w.Write(content)
	case strings.HasPrefix(p, "/v1/batches") && r.Method == http.MethodPost && id == "":
		f.createOpenAI(w, r)
	default:
		b := f.batches[id]
		if b == nil {
			http.Error(w, `{"error":{"message":"no such batch"}}`, http.StatusNotFound)
			return
		}
		switch action {
		case "cancel":
			b.canceled = true
			if b.state == "in_progress" {
				b.state = "canceling"
			}
		case "results":
			_, _ = w.Write(f.anthropicResults(b))
			return
		case "":
			b.polls++
			if b.state == "canceling" || (!f.Hold && b.polls > 1) {
				f.endLocked(b)
			}
		}
		f.writeBatch(w, id, b)
	}
}

// forget deletes a file, or an ended message batch, as the APIs do.
func (f *BatchAPI) forget(w http.ResponseWriter, file bool, id string) {
	if file {
		if _, ok := f.files[id]; !ok {
			http.Error(w, `{"error":{"message":"no such file"}}`, http.StatusNotFound)
			return
		}
		delete(f.files, id)
		_, _ = fmt.Fprintf(w, `{"id":%q,"object":"file","deleted":true}`, id)
		return
	}
	if b := f.batches[id]; b == nil || b.state != "ended" {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"no ended batch "}}`, http.StatusBadRequest)
		return
	}
	delete(f.batches, id)
	_, _ = fmt.Fprintf(w, `{"id":%q,"type":"message_batch_deleted"}`, id)
}

// Kept is how many batches and files the fake still keeps.
func (f *BatchAPI) Kept() (batches, files int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.batches), len(f.files)
}

func (f *BatchAPI) newID(prefix string) string {
	f.seq++
	return fmt.Sprintf("%s%06d", prefix, f.seq)
}

func (f *BatchAPI) createAnthropic(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Requests []struct {
			CustomID string `json:"custom_id"`
			Params   struct {
				Model string `json:"model"`
			} `json:"params"`
		} `json:"requests"`
	}
	body, _ := io.ReadAll(r.Body)
	if json.Unmarshal(body, &in) != nil || len(in.Requests) == 0 {
		http.Error(w, `{"type":"error","error":{"type":"invalid_request_error","message":"bad batch"}}`, http.StatusBadRequest)
		return
	}
	b := &fakeBatch{api: "anthropic", state: "in_progress", created: time.Now().UTC()}
	for _, q := range in.Requests {
		b.ids, b.models = append(b.ids, q.CustomID), append(b.models, q.Params.Model)
	}
	f.add(b)
	f.last = body
	f.writeBatch(w, f.newID("msgbatch_"), b)
}

func (f *BatchAPI) add(b *fakeBatch) {
	f.creates++
	f.models = append(f.models, b.models...)
}

func (f *BatchAPI) upload(w http.ResponseWriter, r *http.Request) {
	file, _, err := r.FormFile("file")
	if err != nil || r.FormValue("purpose") != "batch" {
		http.Error(w, `{"error":{"message":"want a file with purpose batch"}}`, http.StatusBadRequest)
		return
	}
	content, _ := io.ReadAll(file)
	id := f.newID("file-")
	f.files[id] = content
	out, _ := json.Marshal(map[string]any{"id": id, "object": "file", "bytes": len(content), "created_at": time.Now().Unix(), "filename": "batch.jsonl", "purpose": "batch"})
	_, _ = w.Write(out)
}

func (f *BatchAPI) createOpenAI(w http.ResponseWriter, r *http.Request) {
	var in struct {
		InputFileID string `json:"input_file_id"`
		Endpoint    string `json:"endpoint"`
	}
	_ = json.NewDecoder(r.Body).Decode(&in)
	content, ok := f.files[in.InputFileID]
	if !ok {
		http.Error(w, `{"error":{"message":"no such input file"}}`, http.StatusBadRequest)
		return
	}
	b := &fakeBatch{api: "openai", endpoint: in.Endpoint, inputFile: in.InputFileID, state: "in_progress", created: time.Now().UTC()}
	for _, line := range bytes.Split(bytes.TrimSpace(content), []byte("\n")) {
		var q struct {
			CustomID string `json:"custom_id"`
			URL      string `json:"url"`
			Body     struct {
				Model string `json:"model"`
			} `json:"body"`
		}
		if json.Unmarshal(line, &q) != nil || q.URL != in.Endpoint {
			http.Error(w, `{"error":{"message":"bad input line"}}`, http.StatusBadRequest)
			return
		}
		b.ids, b.models = append(b.ids, q.CustomID), append(b.models, q.Body.Model)
	}
	f.add(b)
	f.last = content
	f.writeBatch(w, f.newID("batch_"), b)
}

// endLocked ends b: its requests answered, or canceled.
func (f *BatchAPI) endLocked(b *fakeBatch) {
	b.state = "ended"
	if b.api != "openai" {
		return
	}
	var out, errs bytes.Buffer
	for i, id := range b.ids {
		line := map[string]any{"id": fmt.Sprintf("batch_req_%d", i), "custom_id": id, "response": nil, "error": nil}
		switch {
		case b.canceled:
			line["error"] = map[string]string{"code": "batch_cancelled", "message": "cancelled"}
		case strings.HasPrefix(id, "err"):
			line["response"] = map[string]any{"status_code": 400, "request_id": "req_x", "body": map[string]any{"error": map[string]any{"message": "bad request", "type": "invalid_request_error", "param": nil, "code": nil}}}
		default:
			line["response"] = map[string]any{"status_code": 200, "request_id": "req_x", "body": openAIAnswer(b.endpoint, b.models[i], f.reply())}
		}
		j, _ := json.Marshal(line)
		if line["response"] != nil && !strings.HasPrefix(id, "err") {
			out.Write(append(j, '\n'))
		} else {
			errs.Write(append(j, '\n'))
		}
	}
	if out.Len() > 0 {
		b.outFile = f.newID("file-")
		f.files[b.outFile] = out.Bytes()
	}
	if errs.Len() > 0 {
		b.errFile = f.newID("file-")
		f.files[b.errFile] = errs.Bytes()
	}
}

func openAIAnswer(endpoint, model, reply string) any {
	usage := map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if endpoint == "/v1/embeddings" {
		return map[string]any{"object": "list", "model": model, "data": []any{map[string]any{"object": "embedding", "index": 0, "embedding": []float64{0.1, 0.2}}},
			"usage": map[string]any{"prompt_tokens": 10, "total_tokens": 10}}
	}
	return map[string]any{"id": "chatcmpl-x", "object": "chat.completion", "created": 1, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": reply}, "finish_reason": "stop"}},
		"usage":   usage}
}

func (f *BatchAPI) anthropicResults(b *fakeBatch) []byte {
	var out bytes.Buffer
	for i, id := range b.ids {
		var result any
		switch {
		case b.canceled:
			result = map[string]string{"type": "canceled"}
		case strings.HasPrefix(id, "err"):
			result = map[string]any{"type": "errored", "error": map[string]any{"type": "error", "error": map[string]string{"type": "invalid_request_error", "message": "bad request"}}}
		default:
			result = map[string]any{"type": "succeeded", "message": map[string]any{"id": "msg_x", "type": "message", "role": "assistant", "model": b.models[i],
				"content": []any{map[string]string{"type": "text", "text": f.reply()}}, "stop_reason": "end_turn", "stop_sequence": nil,
				"usage": f.anthropicUsage()}}
		}
		j, _ := json.Marshal(map[string]any{"custom_id": id, "result": result})
		out.Write(append(j, '\n'))
	}
	return out.Bytes()
}

func (f *BatchAPI) reply() string {
	if f.Reply != "" {
		return f.Reply
	}
	return DefaultReply
}

func (f *BatchAPI) anthropicUsage() any {
	if f.usage != nil {
		return f.usage
	}
	return map[string]int{"input_tokens": 10, "output_tokens": 5}
}

// writeBatch answers b in its API's shape, registered under id.
func (f *BatchAPI) writeBatch(w http.ResponseWriter, id string, b *fakeBatch) {
	f.batches[id] = b
	n := len(b.ids)
	var out map[string]any
	if b.api == "anthropic" {
		c := map[string]int{"processing": n, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
		var ended, results any
		if b.state == "ended" {
			c["processing"] = 0
			for _, cid := range b.ids {
				switch {
				case b.canceled:
					c["canceled"]++
				case strings.HasPrefix(cid, "err"):
					c["errored"]++
				default:
					c["succeeded"]++
				}
			}
			ended, results = time.Now().UTC().Format(time.RFC3339), "https://api.anthropic.com/v1/messages/batches/"+id+"/results"
		}
		out = map[string]any{"id": id, "type": "message_batch", "processing_status": b.state, "request_counts": c,
			"ended_at": ended, "created_at": b.created.Format(time.RFC3339), "expires_at": b.created.Add(24 * time.Hour).Format(time.RFC3339),
			"archived_at": nil, "cancel_initiated_at": nil, "results_url": results}
	} else {
		status, done, failed := "in_progress", 0, 0
		switch {
		case b.state == "canceling":
			status = "cancelling"
		case b.state == "ended" && b.canceled:
			status, failed = "cancelled", n
		case b.state == "ended":
			status = "completed"
			for _, cid := range b.ids {
				if strings.HasPrefix(cid, "err") {
					failed++
				} else {
					done++
				}
			}
		}
		nullable := func(s string) any {
			if s == "" {
				return nil
			}
			return s
		}
		out = map[string]any{"id": id, "object": "batch", "endpoint": b.endpoint, "errors": nil, "input_file_id": b.inputFile,
			"completion_window": "24h", "status": status, "output_file_id": nullable(b.outFile), "error_file_id": nullable(b.errFile),
			"created_at": b.created.Unix(), "in_progress_at": b.created.Unix(), "expires_at": b.created.Add(24 * time.Hour).Unix(),
			"finalizing_at": nil, "completed_at": nil, "failed_at": nil, "expired_at": nil, "cancelling_at": nil, "cancelled_at": nil,
			"request_counts": map[string]int{"total": n, "completed": done, "failed": failed}, "metadata": nil}
	}
	j, _ := json.Marshal(out)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(j)
}
