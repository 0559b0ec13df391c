package caddymodule

import (
	"slices"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

// siteOf names the site a handler being provisioned belongs to: its
// server's listen addresses and the host matchers of the server's
// top-level route that holds it (a Caddyfile site block is one such route, its host
// matchers included; a site on its own port has none). Caddy provisions a
// server's routes in order and fills a route's handlers only once all of
// them are provisioned, so the route being provisioned is the first with
// handlers configured and none loaded yet.
//
// The name is the same on every instance running the same configuration
// and stays across reloads, so batches stored in the ledger under it are
// found again by the same site and by no other. It is "" outside an HTTP
// server (a handler provisioned on its own, in tests).
func siteOf(ctx caddy.Context) string {
	srv, ok := ctx.Value(caddyhttp.ServerCtxKey).(*caddyhttp.Server)
	if !ok || srv == nil {
		return ""
	}
	listen := slices.Clone(srv.Listen)
	slices.Sort(listen)
	name := strings.Join(listen, ",")
	for _, r := range srv.Routes {
		if len(r.HandlersRaw) == 0 || len(r.Handlers) > 0 {
			continue
		}
		if m := matchersOf(r.MatcherSets); m != "" {
			name += " " + m
		}
		break
	}
	return name
}

// matchersOf writes a route's host matchers, what a site block's address
// makes, in a stable order: the loaded matchers, since Caddy drops their
// JSON once it has loaded them. Path matchers are left out: llm_auth at a
// site's top and llm_gateway in a handle block of it are one site.
func matchersOf(sets caddyhttp.MatcherSets) string {
	var out []string
	for _, set := range sets {
		for _, m := range set {
			if h, ok := m.(*caddyhttp.MatchHost); ok {
				hosts := slices.Clone(*h)
				slices.Sort(hosts)
				out = append(out, strings.Join(hosts, ","))
			}
		}
	}
	slices.Sort(out)
	return strings.Join(out, " | ")
}
