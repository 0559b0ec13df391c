package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
)

// tracedEnv is a second gateway like the first with Caddy's tracing
// directive on and OpenTelemetry exporting traces and metrics over
// OTLP/HTTP to a sink that reads and drops them: what tracing costs a
// request, export included.
type tracedEnv struct {
	gw          *child
	base, admin string
	sink        *httptest.Server
	// caddy is plain Caddy's reverse_proxy with the tracing directive on:
	// what Caddy's own tracing costs, apart from the gateway's spans.
	caddy                 *child
	caddyBase, caddyAdmin string
}

func (t *tracedEnv) stop() {
	if t == nil {
		return
	}
	if t.gw != nil {
		t.gw.stop()
	}
	if t.caddy != nil {
		t.caddy.stop()
	}
	if t.sink != nil {
		t.sink.Close()
	}
}

// startTraced starts the traced gateway when a gw-traced scenario runs.
func (e *env) startTraced(ctx context.Context, bin string) error {
	if !e.cfg.selects("gw-traced") && !e.cfg.selects("s-gw-traced") && !e.cfg.selects("caddy-traced") {
		return nil
	}
	te := &tracedEnv{sink: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))}
	dir := filepath.Join(e.workdir, "traced")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		te.stop()
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "models.yaml"), []byte(modelsYAML(e.upAddr)), 0o600); err != nil {
		te.stop()
		return err
	}
	env := []string{"BENCH_KEY=" + benchKey, "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf",
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + te.sink.URL, "OTEL_SERVICE_NAME=modelgate-bench"}
	for try := 0; ; try++ {
		port, admin, err := freePorts()
		if err != nil {
			te.stop()
			return err
		}
		te.base, te.admin = fmt.Sprintf("http://127.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", admin)
		probe := probeHTTP(http.MethodGet, te.base+"/health/readiness", nil, nil, `"deployments":11`)
		site := fmt.Sprintf("http://127.0.0.1:%d {\n", port)
		cf := strings.Replace(gatewayCaddyfile(dir, port, admin, e.cfg.durability), site, site+"\ttracing\n", 1)
		te.gw, err = startCaddy(ctx, "gateway-traced", bin, dir, cf, probe, env)
		if err == nil {
			break
		}
		if try == 2 || ctx.Err() != nil {
			te.stop()
			return err
		}
	}
	for try := 0; ; try++ {
		port, admin, err := freePorts()
		if err != nil {
			te.stop()
			return err
		}
		base := fmt.Sprintf("http://127.0.0.1:%d", port)
		probe := probeHTTP(http.MethodPost, base+"/openai/v1/chat/completions", http2json(), chatBody("fake-gpt", false), "chatcmpl-fake")
		site := fmt.Sprintf("http://127.0.0.1:%d {\n", port)
		cf := strings.Replace(caddyfilePlain(e.upAddr, port, admin), site, site+"\ttracing\n", 1)
		te.caddy, err = startCaddy(ctx, "caddy-traced", bin, filepath.Join(e.workdir, "caddy-traced"), cf, probe, env)
		if err == nil {
			te.caddyBase, te.caddyAdmin = base, fmt.Sprintf("127.0.0.1:%d", admin)
			break
		}
		if try == 2 || ctx.Err() != nil {
			te.stop()
			return err
		}
	}
	e.traced = te
	return nil
}

// tracedScenarios are gw-openai and s-gw-openai on the traced gateway,
// and the plain Caddy scenario with tracing on.
func (e *env) tracedScenarios() []scenario {
	var gw, caddy *child
	var base, admin, caddyBase, caddyAdmin string
	if t := e.traced; t != nil {
		gw, base, admin = t.gw, t.base, t.admin
		caddy, caddyBase, caddyAdmin = t.caddy, t.caddyBase, t.caddyAdmin
	}
	h := bearer(benchKey)
	return []scenario{
		{key: "caddy-traced", label: "plain Caddy reverse_proxy, tracing on", proc: caddy, admin: caddyAdmin,
			target: target{url: caddyBase + "/openai/v1/chat/completions", header: http2json(), body: chatBody("fake-gpt", false)}},
		{key: "gw-traced", label: "gateway openai/ (pass-through), tracing + OTLP metrics on", proc: gw, admin: admin,
			target: target{url: base + "/v1/chat/completions", header: h, body: chatBody("oa", false)}},
		{key: "s-gw-traced", label: "gateway openai/ (pass-through), tracing + OTLP metrics on", kind: streaming, proc: gw, admin: admin,
			target: target{url: base + "/v1/chat/completions", header: h, body: chatBody("ts", true), stream: true, stamped: true}},
	}
}
