package upstreamauth

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"time"

	"github.com/modelgate/modelgate/internal/sealed"
)

// MinKeyLength is the shortest mcp_token_key accepted, in bytes: the key
// is the one secret between the ledger's ciphertext and every person's
// upstream tokens.
const MinKeyLength = 32

// sealer encrypts with AES-256-GCM under a key derived from the
// Caddyfile's mcp_token_key, one derived key per use, and binds each
// ciphertext to what it is for (its additional data), so a token row
// cannot be moved to another person or server, and a connect link cannot
// stand for an OAuth state.
type sealer struct {
	tokens, links cipher.AEAD
}

func newSealer(secret string) (*sealer, error) {
	if len(secret) < MinKeyLength {
		return nil, errors.New("mcp_token_key: too short; give at least 32 random bytes, e.g. mcp_token_key {env.MCP_TOKEN_KEY} with MCP_TOKEN_KEY=$(openssl rand -base64 32)")
	}
	derive := func(label string) cipher.AEAD {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write([]byte("modelgate mcp upstream " + label))
		block, _ := aes.NewCipher(m.Sum(nil))
		aead, _ := cipher.NewGCM(block)
		return aead
	}
	return &sealer{tokens: derive("tokens"), links: derive("links")}, nil
}

var errTampered = errors.New("not issued by this gateway, altered, or sealed under another mcp_token_key")

func seal(aead cipher.AEAD, ad string, v any) (string, error) {
	return sealed.Seal(aead, ad, v)
}

func open(aead cipher.AEAD, ad, text string, v any) error {
	if !sealed.Open(aead, ad, text, v) {
		return errTampered
	}
	return nil
}

// tokenSet is what a row of mcp_upstream_tokens holds, sealed: the
// tokens, and the client and endpoint that renew them (a registered
// client's secret too), so any instance refreshes without discovery.
type tokenSet struct {
	Access       string    `json:"a"`
	Refresh      string    `json:"r,omitempty"`
	Type         string    `json:"t,omitempty"`
	Expiry       time.Time `json:"e,omitzero"`
	ClientID     string    `json:"c"`
	ClientSecret string    `json:"s,omitempty"`
	TokenURL     string    `json:"u"`
	// AuthStyle is how the client authenticates at TokenURL
	// (oauth2.AuthStyle: 1 in the form, 2 in a Basic header).
	AuthStyle int    `json:"y,omitempty"`
	Scopes    string `json:"o,omitempty"`
	// Connected is when the person granted it.
	Connected time.Time `json:"k"`
	// Issuer is the authorization server that issued it.
	Issuer string `json:"i,omitempty"`
}

// tokenAD binds a row to its server's name and unit, and to what the
// server is (bind: its URL, its configured authorization server, the
// site): a row sealed for one cannot be opened for another, so a reload
// that points the name elsewhere, or another site sharing the ledger and
// mcp_token_key, never hands the token out.
func tokenAD(server, unit, bind string) string {
	return "token\x00" + server + "\x00" + unit + "\x00" + bind
}

func (s *sealer) sealTokens(server, unit, bind string, t tokenSet) (string, error) {
	return seal(s.tokens, tokenAD(server, unit, bind), t)
}

func (s *sealer) openTokens(server, unit, bind, sealed string) (tokenSet, error) {
	var t tokenSet
	err := open(s.tokens, tokenAD(server, unit, bind), sealed, &t)
	return t, err
}

// link is a connect link's content: which server, for whom, until when,
// and the nonce that makes it complete once.
type link struct {
	Server  string    `json:"s"`
	Unit    string    `json:"u"`
	Expires time.Time `json:"e"`
	Nonce   string    `json:"n"`
}

// state is the OAuth state of one authorization in flight: the link it
// came from, and everything the callback needs on any instance (PKCE
// verifier, client, endpoint), encrypted so the authorization server and
// the browser, which carry it, read none of it.
type state struct {
	link
	Verifier     string `json:"v"`
	ClientID     string `json:"c"`
	ClientSecret string `json:"cs,omitempty"`
	AuthStyle    int    `json:"y,omitempty"`
	TokenURL     string `json:"t"`
	Issuer       string `json:"i"`
	Resource     string `json:"x"`
	Redirect     string `json:"r"`
	Scopes       string `json:"o,omitempty"`
	// IssRequired: the answer must carry iss (RFC 9207 2.4).
	IssRequired bool `json:"ir,omitempty"`
}

const (
	linkAD  = "connect-link"
	stateAD = "oauth-state"
)

func randomID() string {
	var b [18]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
