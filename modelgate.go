// Package modelgate registers Modelgate's Caddy modules. It exists so that
// `xcaddy build --with github.com/modelgate/modelgate` works: xcaddy imports
// exactly the path it is given.
package modelgate

import _ "github.com/modelgate/modelgate/caddymodule"
