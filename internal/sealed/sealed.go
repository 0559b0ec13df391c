// Package sealed turns a value into text only its sealer can read back:
// JSON, encrypted with an AEAD under associated data that names what the
// text is for (so one sealed value cannot stand for another), then
// unpadded base64url. The sign-in cookies and the upstream MCP tokens
// both seal this way, each with its own key.
package sealed

import (
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
)

// Seal encrypts v's JSON under aead, bound to ad, with a fresh nonce
// in front.
func Seal(aead cipher.AEAD, ad string, v any) (string, error) {
	plain, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
	_, _ = rand.Read(nonce)
	return base64.RawURLEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, []byte(ad))), nil
}

// Open reads text sealed by Seal under the same aead and ad into v; false
// when it was not, was altered, or does not decode into v. It says no
// more than that, so a caller's error cannot tell a forger which part
// failed.
func Open(aead cipher.AEAD, ad, text string, v any) bool {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) < aead.NonceSize() {
		return false
	}
	plain, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte(ad))
	return err == nil && json.Unmarshal(plain, v) == nil
}
