package route

import "testing"

func TestCanonical(t *testing.T) {
	for p, want := range map[string]bool{
		"/":                     true,
		"/v1/conversations":     true,
		"/v1/conversations/":    true,
		"/v1/conversations/a/b": true,
		"":                      false,
		"v1":                    false,
		"//v1":                  false,
		"/v1//conversations":    false,
		"/v1/./conversations":   false,
		"/v1/conversations/..":  false,
		"/v1/conversations/a/.": false,
	} {
		if got := Canonical(p); got != want {
			t.Errorf("Canonical(%q) = %v, want %v", p, got, want)
		}
	}
}
