// Command caddy is the Caddy binary with the standard modules and Modelgate's,
// the same program `xcaddy build --with github.com/modelgate/modelgate` produces.
package main

import (
	_ "time/tzdata"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/modelgate/modelgate/caddymodule"
)

func main() {
	caddycmd.Main()
}
