package handlers

import (
	"net/http"
	"net/http/httptest"

	"github.com/modelgate/modelgate/policy"
)

// serve answers a GET of target by h, as the caller id (none when nil),
// with the headers hdr.
func serve(h http.Handler, id *policy.Identity, target string, hdr http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	for k, v := range hdr {
		req.Header[k] = v
	}
	if id != nil {
		req = req.WithContext(policy.WithIdentity(req.Context(), id))
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
