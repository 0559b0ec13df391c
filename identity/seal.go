package identity

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"

	"github.com/modelgate/modelgate/internal/sealed"
)

// sealer encrypts and authenticates what the browser keeps for the
// gateway (the sign-in in progress, the session) with AES-256-GCM. The
// session needs no server-side store, so every instance behind a load
// balancer accepts it: their key is derived from the client secret they
// share. A public client (no secret) gets a random key per process, and
// its sessions then last only while that process does.
type sealer struct {
	aead cipher.AEAD
	mac  []byte // the CSRF tokens' HMAC key
}

func newSealer(cfg Config) *sealer {
	var key [32]byte
	if cfg.ClientSecret != "" {
		m := hmac.New(sha256.New, []byte(cfg.ClientSecret))
		m.Write([]byte("modelgate oidc cookies\x00" + cfg.Issuer + "\x00" + cfg.ClientID))
		copy(key[:], m.Sum(nil))
	} else {
		_, _ = rand.Read(key[:])
	}
	block, _ := aes.NewCipher(key[:])
	aead, _ := cipher.NewGCM(block)
	mac := hmac.New(sha256.New, key[:])
	mac.Write([]byte("csrf"))
	return &sealer{aead: aead, mac: mac.Sum(nil)}
}

// seal encrypts v, bound to purpose so one cookie cannot stand for
// another.
func (s *sealer) seal(purpose string, v any) (string, error) {
	return sealed.Seal(s.aead, purpose, v)
}

var errTampered = errors.New("not issued by this gateway, or altered")

func (s *sealer) open(purpose, text string, v any) error {
	if !sealed.Open(s.aead, purpose, text, v) {
		return errTampered
	}
	return nil
}

// csrf is the token a session's state-changing calls carry.
func (s *sealer) csrf(sessionID string) string {
	m := hmac.New(sha256.New, s.mac)
	m.Write([]byte(sessionID))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func randomID() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
