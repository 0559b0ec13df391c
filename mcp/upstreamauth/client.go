package upstreamauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/modelgate/modelgate/ledger"
)

// registeredClient is the client the gateway registered at an
// authorization server (RFC 7591), as the ledger keeps it, sealed: one
// per (server, authorization server), shared by every instance and kept
// across restarts, so people's grants are all issued to it and renew
// with it.
type registeredClient struct {
	ID     string `json:"i"`
	Secret string `json:"s,omitempty"`
	// SecretExpires is the secret's client_secret_expires_at (zero:
	// never); past it the gateway registers again.
	SecretExpires time.Time `json:"e,omitzero"`
}

// clientUnit is the ledger unit of s's client at issuer: the issuer and
// a digest of what the registration was made for (the server's url and
// configured issuer, the site, the redirect URI), so another site, or a
// new public_url, registers a client of its own.
func (b *Broker) clientUnit(s *server, issuer string) string {
	sum := sha256.Sum256([]byte(s.bind + "\x00" + b.redirect(s.name)))
	return "c:" + issuer + " " + hex.EncodeToString(sum[:12])
}

func clientAD(serverName, unit, bind string) string {
	return "client\x00" + serverName + "\x00" + unit + "\x00" + bind
}

// client is the gateway's registered client at issuer for s: the one the
// ledger keeps, else one registered now and kept there (when another
// instance kept one first, that one). Without a ledger that keeps
// clients it registers one for this process.
func (b *Broker) client(ctx context.Context, s *server, issuer, endpoint, scopes string) (registeredClient, error) {
	var st ledger.MCPUpstreamTokenStore
	if b.opts.Store != nil {
		st = b.opts.Store()
	}
	cs, _ := st.(ledger.MCPUpstreamClientStore)
	if cs == nil {
		return b.register(ctx, s, issuer, endpoint, scopes)
	}
	unit := b.clientUnit(s, issuer)
	row, found, err := st.MCPUpstreamToken(ctx, s.name, unit)
	if err != nil {
		return registeredClient{}, fmt.Errorf("MCP server %q: reading the gateway's registered client from the ledger failed; try again", s.name)
	}
	if found {
		if c, ok := b.openClient(s, unit, row.Sealed); ok {
			return c, nil
		}
	}
	c, err := b.register(ctx, s, issuer, endpoint, scopes)
	if err != nil {
		return registeredClient{}, err
	}
	sealed, err := seal(b.seal.tokens, clientAD(s.name, unit, s.bind), c)
	if err != nil {
		return registeredClient{}, err
	}
	next := ledger.MCPUpstreamToken{Server: s.name, Unit: unit, Sealed: sealed, UpdatedAt: b.now()}
	if found {
		// The stored one is unusable (sealed under another key, or its
		// secret expired): replaced, unless another instance did so
		// first, whose is then used.
		if _, err := st.SwapMCPUpstreamToken(ctx, next, row.Version); errors.Is(err, ledger.ErrTokenChanged) {
			if again, ok, _ := st.MCPUpstreamToken(ctx, s.name, unit); ok {
				if other, ok := b.openClient(s, unit, again.Sealed); ok {
					return other, nil
				}
			}
		}
		return c, nil
	}
	got, mine, err := cs.AddMCPUpstreamToken(ctx, next)
	if err == nil && !mine {
		if other, ok := b.openClient(s, unit, got.Sealed); ok {
			return other, nil
		}
	}
	return c, nil
}

// openClient reads a stored client; false when it cannot be used.
func (b *Broker) openClient(s *server, unit, sealed string) (registeredClient, bool) {
	var c registeredClient
	if open(b.seal.tokens, clientAD(s.name, unit, s.bind), sealed, &c) != nil || c.ID == "" {
		return registeredClient{}, false
	}
	if !c.SecretExpires.IsZero() && !b.now().Before(c.SecretExpires) {
		return registeredClient{}, false
	}
	return c, true
}

// register registers the gateway at endpoint as a public client for s.
func (b *Broker) register(ctx context.Context, s *server, issuer, endpoint, scopes string) (registeredClient, error) {
	reg, err := oauthex.RegisterClient(ctx, endpoint, &oauthex.ClientRegistrationMetadata{
		RedirectURIs: []string{b.redirect(s.name)}, ClientName: "Modelgate", GrantTypes: []string{"authorization_code", "refresh_token"},
		ResponseTypes: []string{"code"}, TokenEndpointAuthMethod: "none", Scope: scopes,
	}, b.hc)
	if err != nil {
		var re *oauthex.ClientRegistrationError
		if errors.As(err, &re) {
			return registeredClient{}, fmt.Errorf("MCP server %q: authorization server %s refused to register the gateway: %s", s.name, issuer, errorCode(re.ErrorCode))
		}
		// The SDK's other errors may quote the answer, which may hold
		// a client secret: not shown.
		return registeredClient{}, fmt.Errorf("MCP server %q: registering the gateway at %s failed", s.name, issuer)
	}
	return registeredClient{ID: reg.ClientID, Secret: reg.ClientSecret, SecretExpires: reg.ClientSecretExpiresAt}, nil
}
