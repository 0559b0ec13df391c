package caddymodule

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// TestSiteOf: a site is its server's listen addresses and the hosts of the
// top-level route being provisioned (the first whose handlers are not
// loaded yet), the same whatever order they were written in; "" outside
// a server.
func TestSiteOf(t *testing.T) {
	if got := siteOf(caddy.Context{Context: context.Background()}); got != "" {
		t.Errorf("outside a server: %q", got)
	}
	hostA, hostB := caddyhttp.MatchHost{"b.example.com", "a.example.com"}, caddyhttp.MatchHost{"c.example.com"}
	path := caddyhttp.MatchPath{"/v1/*"}
	srv := &caddyhttp.Server{Listen: []string{":443", ":8443"}, Routes: caddyhttp.RouteList{
		{HandlersRaw: nil, Handlers: []caddyhttp.MiddlewareHandler{nil}, MatcherSets: caddyhttp.MatcherSets{{&hostB}}},
		{HandlersRaw: []json.RawMessage{[]byte(`{}`)}, MatcherSets: caddyhttp.MatcherSets{{&hostA, &path}}},
		{HandlersRaw: []json.RawMessage{[]byte(`{}`)}, MatcherSets: caddyhttp.MatcherSets{{&hostB}}},
	}}
	ctx := caddy.Context{Context: context.WithValue(context.Background(), caddyhttp.ServerCtxKey, srv)}
	if got, want := siteOf(ctx), ":443,:8443 a.example.com,b.example.com"; got != want {
		t.Errorf("site: %q, want %q", got, want)
	}
	srv.Listen = []string{":8443", ":443"}
	srv.Routes[1].Handlers = []caddyhttp.MiddlewareHandler{nil}
	if got, want := siteOf(ctx), ":443,:8443 c.example.com"; got != want {
		t.Errorf("the next site: %q, want %q", got, want)
	}
}
