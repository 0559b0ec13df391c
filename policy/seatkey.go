package policy

import (
	"crypto/sha256"
	"crypto/subtle"
)

// Knows reports whether secret is one of the gateway's keys, in any state
// (active, disabled, archived, expired). A request that sends its gateway
// key in X-Modelgate-Key passes Authorization and x-api-key to a seat's
// provider; a gateway key found there must never be sent on.
func (a *Auth) Knows(secret string) bool {
	d := sha256.Sum256([]byte(secret))
	found := false
	for i := range a.keys {
		if subtle.ConstantTimeCompare(d[:], a.keys[i].digest[:]) == 1 {
			found = true
		}
	}
	return found || a.runtime.lookup(d) != nil
}
