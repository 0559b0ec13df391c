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
	// scheme, host and port are the origin's parts, compared per request
	// without building a string.
	scheme, host, port string
	base               http.RoundTripper
}

func (t sameOrigin) RoundTrip(r *http.Request) (*http.Response, error) {
	if !t.within(r.URL) {
		if r.Body != nil {
			_ = r.Body.Close()
		}
		return nil, t.refused(originOf(r.URL))
	}
	return t.base.RoundTrip(r)
}

// within reports whether u is on the origin.
func (t sameOrigin) within(u *url.URL) bool {
	return u != nil && strings.EqualFold(u.Scheme, t.scheme) && strings.EqualFold(u.Hostname(), t.host) && portOf(u) == t.port
}

// checkRedirect is the upstream client's redirect policy: within the
// origin only, which sameOrigin enforces again per request.
func (t sameOrigin) checkRedirect(r *http.Request, via []*http.Request) error {
	if !t.within(r.URL) {
		return t.refused(originOf(r.URL))
	}
	if len(via) >= 10 {
		return fmt.Errorf("MCP server %q: more than 10 redirects", t.server)
	}
	return nil
}

func (t sameOrigin) refused(to string) error {
	return fmt.Errorf("MCP server %q: refused a request to %s, another origin than its url's (%s); the gateway sends the server's credentials to its own origin only", t.server, to, t.origin)
}

// portOf is u's port, the scheme's default when it names none.
func portOf(u *url.URL) string {
	if p := u.Port(); p != "" {
		return p
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}

// originOf is u's scheme, host and port, lower-cased, the port explicit.
func originOf(u *url.URL) string {
	if u == nil {
		return ""
	}
	host := strings.ToLower(u.Hostname())
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return strings.ToLower(u.Scheme) + "://" + host + ":" + portOf(u)
}

// originGuard is the sameOrigin of server's entry url over base; an
// unparsable url lets nothing through.
func originGuard(server, rawURL string, base http.RoundTripper) sameOrigin {
	g := sameOrigin{server: server, origin: "(no valid url)", base: base}
	if u, err := url.Parse(rawURL); err == nil && u.Host != "" {
		g.origin, g.scheme, g.host, g.port = originOf(u), u.Scheme, u.Hostname(), portOf(u)
	}
	return g
}
