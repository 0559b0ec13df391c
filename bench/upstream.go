package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
)

// upstreamMux serves the fakes under one listener, one prefix per
// backend kind, so the gateway and plain Caddy reach the same process.
//
//	/openai/v1/chat/completions     OpenAI fake (JSON and SSE)
//	/anthropic/v1/messages          Anthropic fake
//	/ollama/api/chat                Ollama fake
//	/ts/v1/chat/completions         OpenAI SSE whose deltas carry their send time
//	/idle/v1/chat/completions       OpenAI SSE that pauses for an hour after its first chunk
//	/slow/v1/chat/completions       OpenAI fake answering after mockDelay (the field's 20 ms mock)
//	/tf/v1/chat/completions         short stamped stream (ttftChunks deltas ttftGap apart), for time to first token
func upstreamMux(o fakes.Options) http.Handler { return upstreamMuxWith(o, nil) }

// upstreamMuxWith records what the OpenAI fake receives in rec (tests).
func upstreamMuxWith(o fakes.Options, rec *fakes.Recorder) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/openai/", http.StripPrefix("/openai", fakes.OpenAI(o, rec)))
	mux.Handle("/anthropic/", http.StripPrefix("/anthropic", fakes.Anthropic(o, nil)))
	mux.Handle("/ollama/", http.StripPrefix("/ollama", fakes.Ollama(o, nil)))
	mux.Handle("/ts/", http.StripPrefix("/ts", stampedStream(o)))
	idle := o
	idle.Gap = time.Hour
	mux.Handle("/idle/", http.StripPrefix("/idle", fakes.OpenAI(idle, nil)))
	mux.Handle("/slow/", http.StripPrefix("/slow", delayed(mockDelay, fakes.OpenAI(o, nil))))
	short := o
	short.Chunks, short.Gap = ttftChunks, ttftGap
	mux.Handle("/tf/", http.StripPrefix("/tf", stampedStream(short)))
	return mux
}

// The yardstick's mocks: the field measures sustained throughput against
// an upstream that takes 20 ms to answer, and time to first token on
// streams short enough that a few seconds give thousands of them.
const (
	mockDelay  = 20 * time.Millisecond
	ttftChunks = 4
	ttftGap    = 500 * time.Microsecond
)

// delayed answers with h after d (sooner when the client goes away).
func delayed(d time.Duration, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if fakes.Pause(r, d) {
			h.ServeHTTP(w, r)
		}
	})
}

// stampedStream is an OpenAI chat-completions SSE stream whose content
// deltas are the wall-clock send time in Unix nanoseconds. All processes
// share the machine's clock, so the client can tell how long each chunk
// spent in whatever sits between it and the upstream. Non-streaming
// requests get the regular OpenAI fake.
func stampedStream(o fakes.Options) http.Handler {
	plain := fakes.OpenAI(o, nil)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		var req fakes.OpenAIChatRequest
		if json.Unmarshal(body, &req) != nil || !req.Stream {
			r.Body = io.NopCloser(bytes.NewReader(body))
			plain.ServeHTTP(w, r)
			return
		}
		chunks := o.Chunks
		if chunks <= 0 {
			chunks = 20
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		rc := http.NewResponseController(w)
		model := strconv.Quote(req.Model)
		buf := make([]byte, 0, 256)
		for i := 0; i < chunks; i++ {
			if i > 0 && !fakes.Pause(r, o.Gap) {
				return
			}
			buf = append(buf[:0], `data: {"id":"chatcmpl-ts","object":"chat.completion.chunk","created":1730000000,"model":`...)
			buf = append(buf, model...)
			buf = append(buf, `,"choices":[{"index":0,"delta":{"content":"`...)
			buf = strconv.AppendInt(buf, time.Now().UnixNano(), 10)
			buf = append(buf, `"},"finish_reason":null}],"usage":null}`+"\n\n"...)
			if _, err := w.Write(buf); err != nil {
				return
			}
			_ = rc.Flush()
		}
		fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-ts\",\"object\":\"chat.completion.chunk\",\"created\":1730000000,\"model\":%s,\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":null}\n\n", model)
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			fmt.Fprintf(w, "data: {\"id\":\"chatcmpl-ts\",\"object\":\"chat.completion.chunk\",\"created\":1730000000,\"model\":%s,\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":%d,\"total_tokens\":%d}}\n\n",
				model, fakes.OpenAIPromptTokens, chunks, fakes.OpenAIPromptTokens+chunks)
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		_ = rc.Flush()
	})
}

// runUpstream is the -upstream mode: serve until stdin closes (the parent
// exited, however it ended) or a signal arrives.
func runUpstream(listen string, o fakes.Options) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: upstreamMux(o), ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening %s\n", ln.Addr())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
