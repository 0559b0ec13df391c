package approval

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strings"
	"time"
)

// A link token is what an approve or deny link in a chat message carries:
// which approval, which decision, until when, and a MAC over those and the
// approval's binding under the approval's own secret (kept in the ledger,
// so every instance checks a link any instance wrote, and no key needs
// configuring). A token decides only the call it was made for: the
// binding names the caller, server, tool, argument hash and policy
// version.
//
// Wire form: "v1." + base64url(payload) + "." + base64url(mac), unpadded;
// payload is the decision byte ('a' approve, 'd' deny), the expiry in Unix
// seconds (8 bytes, big-endian) and the approval id.

// Link is a decoded link token.
type Link struct {
	ID      string
	Approve bool
	Expires time.Time
	mac     []byte
}

const (
	tokenPrefix = "v1."
	macSize     = 32
	// maxIDLen bounds the id a token may carry (ids are "apr_" + 32 hex).
	maxIDLen = 64
)

// Sign returns the token for deciding approval id (approve or deny) until
// expires, keyed by secret (hex) and bound to binding.
func Sign(id string, approve bool, expires time.Time, secretHex, binding string) string {
	p := payload(id, approve, expires)
	enc := base64.RawURLEncoding
	return tokenPrefix + enc.EncodeToString(p) + "." + enc.EncodeToString(mac(secretHex, binding, p))
}

func payload(id string, approve bool, expires time.Time) []byte {
	p := make([]byte, 9, 9+len(id))
	p[0] = 'd'
	if approve {
		p[0] = 'a'
	}
	binary.BigEndian.PutUint64(p[1:9], uint64(expires.Unix()))
	return append(p, id...)
}

func mac(secretHex, binding string, p []byte) []byte {
	key, _ := hex.DecodeString(secretHex)
	m := hmac.New(sha256.New, key)
	m.Write([]byte("modelgate mcp approval link\x00"))
	m.Write([]byte(binding))
	m.Write([]byte{0})
	m.Write(p)
	return m.Sum(nil)
}

// ErrBadToken is every malformed token: one answer, so a prober learns
// nothing from which part failed.
var ErrBadToken = errors.New("not an approval link token")

// Parse decodes a token without checking its MAC (Verify does, once the
// approval's secret is read).
func Parse(tok string) (Link, error) {
	rest, ok := strings.CutPrefix(tok, tokenPrefix)
	if !ok || len(tok) > 256 {
		return Link{}, ErrBadToken
	}
	pEnc, mEnc, ok := strings.Cut(rest, ".")
	if !ok || !base64URLText(pEnc) || !base64URLText(mEnc) {
		return Link{}, ErrBadToken
	}
	enc := base64.RawURLEncoding.Strict()
	p, err := enc.DecodeString(pEnc)
	if err != nil || len(p) < 10 || len(p) > 9+maxIDLen || (p[0] != 'a' && p[0] != 'd') {
		return Link{}, ErrBadToken
	}
	m, err := enc.DecodeString(mEnc)
	if err != nil || len(m) != macSize {
		return Link{}, ErrBadToken
	}
	id := string(p[9:])
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return Link{}, ErrBadToken
		}
	}
	exp := binary.BigEndian.Uint64(p[1:9])
	if exp > 1<<40 {
		return Link{}, ErrBadToken
	}
	return Link{ID: id, Approve: p[0] == 'a', Expires: time.Unix(int64(exp), 0).UTC(), mac: m}, nil
}

// Verify reports whether l was signed with the approval's secret for its
// binding.
func (l Link) Verify(secretHex, binding string) bool {
	return hmac.Equal(l.mac, mac(secretHex, binding, payload(l.ID, l.Approve, l.Expires)))
}

// base64URLText reports whether s holds only the unpadded base64url
// alphabet: encoding/base64 skips CR and LF even when Strict, which would
// give one token two spellings.
func base64URLText(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
