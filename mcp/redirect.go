package mcp

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// sameOrigin keeps every request of an upstream's transport, and so its
// credentials (the entry's headers, a person's token), on the origin of
// the entry's url: a redirect (answered to a notification, to the GET
// event stream, to anything of the legacy SSE transport) or an SSE
// endpoint event naming another scheme, host or port is refused before
// the credentials are added. Go's client would drop Authorization on such
// a hop, but the transports below add it back on every request.
type sameOrigin struct {
	server, origin string
	base           http.RoundTripper
}

func (t sameOrigin) RoundTrip(r *http.Request) (*http.Response, error) {
	if got := originOf(r.URL); got != t.origin {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, t.refused(got)
	}
	return t.base.RoundTrip(r)
}

// checkRedirect is the upstream client's redirect policy: within the
// origin only, which sameOrigin enforces again per request.
func (t sameOrigin) checkRedirect(r *http.Request, via []*http.Request) error {
	if got := originOf(r.URL); got != t.origin {
		return t.refused(got)
	}
	if len(via) >= 10 {
		return fmt.Errorf("MCP server %q: more than 10 redirects", t.server)
	}
	return nil
}

func (t sameOrigin) refused(to string) error {
	return fmt.Errorf("MCP server %q: refused a request to %s, another origin than its url's (%s); the gateway sends the server's credentials to its own origin only", t.server, to, t.origin)
}

// originOf is u's scheme, host and port, lower-cased, the port explicit.
func originOf(u *url.URL) string {
	if u == nil {
		return ""
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname())
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return scheme + "://" + host + ":" + port
}

// originGuard is the sameOrigin of server's entry url over base.
func originGuard(server, rawURL string, base http.RoundTripper) sameOrigin {
	u, err := url.Parse(rawURL)
	if err != nil {
		u = nil
	}
	o := originOf(u)
	if o == "" {
		o = "(no valid url)"
	}
	return sameOrigin{server: server, origin: o, base: base}
}
