// Package route holds what the site's http.ServeMux route tables share.
package route

import (
	"path"
	"strings"
)

// Canonical reports whether p (escaped) is what ServeMux would route as
// it is: no dot segments, no doubled slashes. ServeMux redirects any other
// path to its cleaned form, and no endpoint of the site is named that way,
// so a table answers such a path with its own 404 instead.
func Canonical(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}
