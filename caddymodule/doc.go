// Package caddymodule holds Modelgate's Caddy modules, Caddyfile directives
// and CLI subcommands. It is the only package that imports Caddy.
package caddymodule
