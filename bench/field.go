package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// fieldConfig is `go run ./bench -field`: the metrics the open gateway
// benchmarks publish, so Modelgate's figures sit beside theirs — the p99
// a proxy adds at concurrency 1, the throughput it sustains under a p99
// bound, the paced streams it carries without a stall, and its memory
// over a soak. See docs/benchmarks.md.
type fieldConfig struct {
	on      bool
	metrics *regexp.Regexp

	c1Requests, c1Rounds int
	c1Budget             time.Duration

	sweep         []int
	sweepDuration time.Duration

	streamDeltas int
	streamPace   time.Duration
	streamLevels []int
	streamDials  int

	soak, soakIdle time.Duration
	soakConc       int
}

// fieldFlags registers the -field flags on the command line; parse
// finishes what flag.Parse cannot (lists, regexps).
func fieldFlags() (fc *fieldConfig, parse func() error) {
	fc = &fieldConfig{}
	flag.BoolVar(&fc.on, "field", false, "instead of the proxy scenarios: the field metrics (added p99 at concurrency 1, throughput frontier, streams sustained, memory soak)")
	metrics := flag.String("field-metrics", "latency|frontier|streams|soak", "-field: regexp of the metrics to run")
	flag.IntVar(&fc.c1Requests, "c1-requests", 10000, "-field latency: requests per scenario at concurrency 1")
	flag.IntVar(&fc.c1Rounds, "c1-rounds", 5, "-field latency: interleaved rounds the requests are split into")
	flag.DurationVar(&fc.c1Budget, "c1-budget", 60*time.Second, "-field latency: time bound per scenario (fewer requests when it runs out)")
	sweep := flag.String("sweep", "1,2,4,8,16,32,64,128", "-field frontier: concurrencies of the sweep")
	flag.DurationVar(&fc.sweepDuration, "sweep-duration", 3*time.Second, "-field frontier: measured length of each sweep point (after -warmup)")
	flag.IntVar(&fc.streamDeltas, "stream-deltas", 64, "-field streams: content deltas per paced stream")
	flag.DurationVar(&fc.streamPace, "stream-pace", 20*time.Millisecond, "-field streams: upstream pause between deltas (a stall is a gap over 10× this)")
	levels := flag.String("stream-levels", "8,16,32,64,128,256,512,1024,2048", "-field streams: concurrent streams to try, in order, until one stalls or loses a frame")
	flag.IntVar(&fc.streamDials, "stream-dials", 128, "-field streams: connections being opened at once")
	flag.DurationVar(&fc.soak, "soak", 60*time.Second, "-field soak: length of the steady load")
	flag.DurationVar(&fc.soakIdle, "soak-idle", 15*time.Second, "-field soak: idle time after the load before RSS is read again")
	flag.IntVar(&fc.soakConc, "soak-concurrency", 16, "-field soak: closed-loop workers")
	return fc, func() error {
		var err error
		if fc.metrics, err = regexp.Compile(*metrics); err != nil {
			return fmt.Errorf("-field-metrics: %w", err)
		}
		if fc.sweep, err = parseInts(*sweep); err != nil {
			return fmt.Errorf("-sweep: %w", err)
		}
		if fc.streamLevels, err = parseInts(*levels); err != nil {
			return fmt.Errorf("-stream-levels: %w", err)
		}
		if fc.c1Rounds < 1 || fc.c1Requests < fc.c1Rounds || fc.streamDeltas < 2 || fc.streamPace <= 0 || fc.soakConc < 1 || fc.streamDials < 1 {
			return fmt.Errorf("-c1-requests ≥ -c1-rounds ≥ 1, -stream-deltas ≥ 2, -stream-pace > 0, -soak-concurrency and -stream-dials ≥ 1")
		}
		return nil
	}
}

// parseInts reads a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// proxyTarget is one thing the field metrics measure: a proxy (or the
// upstream itself) and the request it is driven with.
type proxyTarget struct {
	key, label string
	proc       *child // nil for direct
	req        target
}

// fieldTargets are the request/response targets: direct (the baseline
// the added latency is taken from), plain Caddy, the gateway passing
// chat through, the gateway translating an Anthropic Messages request to
// the openai/ chat upstream, and Portkey when it runs.
func (e *env) fieldTargets() []proxyTarget {
	up := "http://" + e.upAddr
	list := []proxyTarget{
		{key: "direct", label: "direct to upstream", req: target{url: up + "/openai/v1/chat/completions", header: http2json(), body: chatBody("fake-gpt", false)}},
		{key: "caddy", label: "plain Caddy reverse_proxy", proc: e.caddy, req: target{url: e.caddyBase + "/openai/v1/chat/completions", header: http2json(), body: chatBody("fake-gpt", false)}},
		{key: "gw-openai", label: "gateway openai/ (pass-through)", proc: e.gw, req: target{url: e.gwBase + "/v1/chat/completions", header: bearer(benchKey), body: chatBody("oa", false)}},
		{key: "gw-messages", label: "gateway Anthropic Messages → openai/ chat (translated)", proc: e.gw, req: target{url: e.gwBase + "/v1/messages", header: anthropicHeader(benchKey), body: messagesBody("oa", false)}},
	}
	if e.pk != nil {
		list = append(list, proxyTarget{key: "portkey", label: "Portkey gateway (npm), openai chat", proc: e.pk, req: target{url: e.pkBase + "/v1/chat/completions", header: portkeyHeader(up + "/openai/v1"), body: chatBody("fake-gpt", false)}})
	}
	return list
}

// streamTargets are the paced stamped streams (the upstream's /ts/).
func (e *env) streamTargets() []proxyTarget {
	up := "http://" + e.upAddr
	list := []proxyTarget{
		{key: "direct", label: "direct to upstream", req: target{url: up + "/ts/v1/chat/completions", header: http2json(), body: chatBody("fake-stamped", true), stream: true, stamped: true}},
		{key: "caddy", label: "plain Caddy reverse_proxy", proc: e.caddy, req: target{url: e.caddyBase + "/ts/v1/chat/completions", header: http2json(), body: chatBody("fake-stamped", true), stream: true, stamped: true}},
		{key: "gw-openai", label: "gateway openai/ (pass-through)", proc: e.gw, req: target{url: e.gwBase + "/v1/chat/completions", header: bearer(benchKey), body: chatBody("ts", true), stream: true, stamped: true}},
	}
	if e.pk != nil {
		list = append(list, proxyTarget{key: "portkey", label: "Portkey gateway (npm), openai chat", proc: e.pk, req: target{url: e.pkBase + "/v1/chat/completions", header: portkeyHeader(up + "/ts/v1"), body: chatBody("fake-stamped", true), stream: true, stamped: true}})
	}
	return list
}

func portkeyHeader(customHost string) http.Header {
	h := bearer("sk-portkey-unused")
	h.Set("X-Portkey-Provider", "openai")
	h.Set("X-Portkey-Custom-Host", customHost)
	return h
}

// anthropicHeader is what Claude Code and the Anthropic SDKs send.
func anthropicHeader(key string) http.Header {
	return http.Header{"X-Api-Key": {key}, "Anthropic-Version": {"2023-06-01"}, "Content-Type": {"application/json"}}
}

// messagesBody is chatBody's conversation as an Anthropic Messages
// request: the system prompt at the top level, max_tokens required.
func messagesBody(model string, stream bool) []byte {
	var chat struct {
		Messages []map[string]string `json:"messages"`
	}
	_ = json.Unmarshal(chatBody(model, stream), &chat)
	msgs := []map[string]any{}
	for _, m := range chat.Messages[1:] {
		msgs = append(msgs, map[string]any{"role": m["role"], "content": []map[string]string{{"type": "text", "text": m["content"]}}})
	}
	b, _ := json.Marshal(map[string]any{
		"model": model, "system": chat.Messages[0]["content"], "messages": msgs,
		"max_tokens": 512, "temperature": 0.2, "stream": stream,
	})
	return b
}

// runField starts the same processes as the proxy scenarios, with the
// upstream's stamped stream paced as -stream-deltas and -stream-pace
// say, and prints a table per metric as each finishes: the soak, then
// latency, frontier and streams.
func runField(ctx context.Context, c config, fc fieldConfig, w io.Writer) (err error) {
	raiseNoFile()
	c.chunks, c.gap = fc.streamDeltas, fc.streamPace
	e, stop, err := startEnv(ctx, c)
	if err != nil {
		return err
	}
	defer stop()
	// Each proxy's memory before any load: the soak's first column.
	startRSS := map[string]float64{}
	for _, t := range e.fieldTargets() {
		if t.proc != nil {
			if m, err := readMem(t.proc.pid()); err == nil {
				startRSS[t.key] = m.rssMB
			}
		}
	}
	// Every target must answer before anything is timed: a scenario the
	// gateway refuses would otherwise time its error page.
	for _, t := range e.fieldTargets() {
		if err := probeHTTP(http.MethodPost, t.req.url, t.req.header, t.req.body, "")(); err != nil {
			return fmt.Errorf("%s: %w", t.key, err)
		}
	}
	fmt.Fprintf(w, "Machine: %s.\n", machine())
	// The soak first, on processes that have served nothing but their
	// probes: after the streams metric a proxy is still giving back the
	// memory of a thousand streams, and its idle and growth would show that.
	if fc.metrics.MatchString("soak") {
		res, err := e.measureSoak(ctx, fc, startRSS)
		if err != nil {
			return err
		}
		printSoak(w, fc, res)
	}
	if fc.metrics.MatchString("latency") {
		res, err := measureC1(ctx, e.fieldTargets(), fc.c1Requests, fc.c1Rounds, fc.c1Budget)
		if err != nil {
			return err
		}
		printC1(w, fc, res)
	}
	if fc.metrics.MatchString("frontier") {
		sw, err := measureSweep(ctx, e.fieldTargets(), fc.sweep, c.warmup, fc.sweepDuration)
		if err != nil {
			return err
		}
		printFrontier(w, fc, sw)
	}
	if fc.metrics.MatchString("streams") {
		res, err := measureStreams(ctx, e.streamTargets(), fc)
		if err != nil {
			return err
		}
		printStreams(w, fc, res)
	}
	return nil
}
