package handlers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// cachedMessages is a Claude Code-like turn with Anthropic's most of four
// cache breakpoints, the 1-hour ones before the 5-minute ones as its API
// requires: the last tool and a system block (1 h), a tool_use in the
// middle of a message and the last text block (5 m), around blocks that
// have none (text, a tool_result, an image).
const cachedMessages = `{"model":%q,"max_tokens":64,"stream":%v,` +
	`"tools":[{"name":"read","description":"read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}}},` +
	`{"name":"edit","description":"edit","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
	`"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Project rules.","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
	`"messages":[{"role":"user","content":[{"type":"text","text":"first"},{"type":"text","text":"second"}]},` +
	`{"role":"assistant","content":[{"type":"text","text":"reading"},{"type":"tool_use","id":"toolu_1","name":"read","input":{"path":"a.go"},"cache_control":{"type":"ephemeral","ttl":"5m"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"package a"},` +
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"now edit","cache_control":{"type":"ephemeral"}}]}]}`

// cacheControls lists every cache_control in a JSON value by its path.
func cacheControls(t *testing.T, raw []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	var out []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, c := range x {
				if k == "cache_control" {
					b, _ := json.Marshal(c)
					out = append(out, path+"."+k+"="+string(b))
					continue
				}
				walk(path+"."+k, c)
			}
		case []any:
			for i, c := range x {
				walk(fmt.Sprintf("%s[%d]", path, i), c)
			}
		}
	}
	walk("", v)
	sort.Strings(out)
	return out
}

// promptParts is what a cache is keyed on: tools, system and messages.
func promptParts(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, raw)
	}
	return map[string]any{"tools": m["tools"], "system": m["system"], "messages": m["messages"]}
}

// TestCacheControlPreserved: a Messages request to an Anthropic upstream,
// to Claude on Bedrock and to Claude on Vertex AI reaches the upstream
// with every cache_control where the client put it, none added, none
// dropped, none moved, and the cached prefix unchanged, whole and
// streamed.
func TestCacheControlPreserved(t *testing.T) {
	anth := &fakes.Recorder{}
	anthSrv := httptest.NewServer(fakes.Anthropic(fakes.Options{}, anth))
	t.Cleanup(anthSrv.Close)
	bedrock := newBedrockFake(t, fakes.BedrockOptions{})
	vertex := newVertexFake(t, fakes.VertexOptions{})
	yaml := "model_list:\n" + kindEntry("direct", "anthropic/claude-sonnet-4-5", anthSrv.URL) +
		bedrockEntry("bedrock", bedrock.srv.URL) + vertex.entry(t, "vertex")
	g, _ := testGateway(t, yaml, nil)

	cases := []struct {
		alias string
		rec   *fakes.Recorder
	}{{"direct", anth}, {"bedrock", bedrock.rec}, {"vertex", vertex.rec}}
	want := cacheControls(t, []byte(fmt.Sprintf(cachedMessages, "x", false)))
	if len(want) != 4 {
		t.Fatalf("the fixture has %d breakpoints, want 4: %v", len(want), want)
	}
	for _, c := range cases {
		for _, stream := range []bool{false, true} {
			body := fmt.Sprintf(cachedMessages, c.alias, stream)
			rr := post(g, alice, "/v1/messages", body, "Anthropic-Version", "2023-06-01", "Anthropic-Beta", "extended-cache-ttl-2025-04-11")
			if rr.Code != http.StatusOK {
				t.Fatalf("%s stream=%v: %d %s", c.alias, stream, rr.Code, rr.Body)
			}
			sent := c.rec.Last().Body
			if got := cacheControls(t, sent); !reflect.DeepEqual(got, want) {
				t.Errorf("%s stream=%v: cache_control upstream\n got %v\nwant %v", c.alias, stream, got, want)
			}
			if got, w := promptParts(t, sent), promptParts(t, []byte(body)); !reflect.DeepEqual(got, w) {
				t.Errorf("%s stream=%v: the cached prefix changed on the way:\n%s", c.alias, stream, sent)
			}
			if c.alias == "direct" && !strings.Contains(string(sent), `"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Project rules.","cache_control":{"type":"ephemeral","ttl":"1h"}}]`) {
				t.Errorf("direct stream=%v: the system blocks were re-encoded: %s", stream, sent)
			}
		}
	}
}
