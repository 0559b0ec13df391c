package upstream

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
)

// postTargets keeps the URLs a deployment posts to, parsed once: an
// endpoint's URLs are a few fixed strings (one per client format, and per
// streaming), and parsing the URL again for every request was most of
// building it. A URL with a query (an Anthropic client's query passed on)
// is parsed per request and never kept, so no client can grow the set.
type postTargets struct {
	m sync.Map // URL string → *http.Request: the template's URL and Host
	n atomic.Int32
}

// maxPostTargets bounds the kept URLs; more than an endpoint has.
const maxPostTargets = 64

// newPost is http.NewRequestWithContext(ctx, "POST", rawURL, body) with
// the URL parsed once.
func (t *postTargets) newPost(ctx context.Context, rawURL string, body []byte) (*http.Request, error) {
	tmpl := t.template(rawURL)
	if tmpl == nil {
		return http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	}
	// An empty URL parses without work; the request is then NewRequest's
	// own (its body, length and GetBody), addressed as the template.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	*req.URL = *tmpl.URL
	req.Host = tmpl.Host
	return req, nil
}

// template is rawURL's kept template, made at its first use; nil for a
// URL that is not kept or does not parse (NewRequest then says why).
func (t *postTargets) template(rawURL string) *http.Request {
	if v, ok := t.m.Load(rawURL); ok {
		return v.(*http.Request)
	}
	if strings.IndexByte(rawURL, '?') >= 0 || t.n.Load() >= maxPostTargets {
		return nil
	}
	tmpl, err := http.NewRequest(http.MethodPost, rawURL, nil)
	if err != nil {
		return nil
	}
	if _, loaded := t.m.LoadOrStore(rawURL, tmpl); !loaded {
		t.n.Add(1)
	}
	return tmpl
}
