package upstreamauth

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/ledger"
)

// revokeTimeout bounds telling an authorization server that a grant
// ended: a disconnect waits for it, and an authorization server that does
// not answer must not hold the person's click.
const revokeTimeout = 5 * time.Second

// revokeParallel bounds the revocations of grants ended with their
// holder (Ended) that run at once.
const revokeParallel = 8

// Revocation outcomes, as the disconnect's audit entry records them.
const (
	revokedYes        = "revoked"
	revokedNotOffered = "not offered"
	revokedFailed     = "failed"
)

// forget deletes unit's grant to serverName and, when there was one,
// revokes its tokens at the authorization server that issued them
// (RFC 7009); gone reports a row deleted, outcome what the authorization
// server said ("" when nothing was deleted or the row could not be read).
func (b *Broker) forget(ctx context.Context, st ledger.MCPUpstreamTokenStore, serverName, unit string) (gone bool, outcome string, err error) {
	var row ledger.MCPUpstreamToken
	// The row read is the row deleted (a renewal storing new tokens
	// between the two moves the version): the tokens revoked are the
	// ones forgotten. A few tries; then it is deleted whatever it holds.
	for try := 0; !gone; try++ {
		var found bool
		if row, found, err = st.MCPUpstreamToken(ctx, serverName, unit); err != nil || !found {
			return false, "", err
		}
		if try == 3 {
			if gone, err = st.DeleteMCPUpstreamToken(ctx, serverName, unit); err != nil || !gone {
				return gone, "", err
			}
			break
		}
		if gone, err = st.DeleteMCPUpstreamTokenAt(ctx, serverName, unit, row.Version); err != nil {
			return false, "", err
		}
	}
	set, err := b.openSet(serverName, unit, row.Sealed)
	if err != nil {
		// Sealed for another url, issuer or site: the gateway cannot
		// read it, so there is nothing it could revoke.
		return true, "", nil
	}
	return true, b.revoke(context.WithoutCancel(ctx), set), nil
}

// revoke asks set's authorization server to revoke its refresh token,
// then its access token (RFC 7009 2.1: a server may end the whole grant
// with the refresh token, and need not), authenticating as the client
// they were issued to. Best effort within revokeTimeout: the grant is
// gone from the ledger either way. Neither token, nor the server's
// answer, is logged or shown.
func (b *Broker) revoke(ctx context.Context, set tokenSet) string {
	ctx, cancel := context.WithTimeout(ctx, b.revokeWithin)
	defer cancel()
	if set.Issuer == "" {
		return revokedNotOffered
	}
	asm, err := b.serverMetadata(ctx, set.Issuer)
	if err != nil {
		return revokedFailed
	}
	if asm.RevocationEndpoint == "" {
		return revokedNotOffered
	}
	// A server that revokes refresh tokens only answers the access
	// token's request unsupported_token_type: the refresh token's
	// revocation is what counts.
	outcome := revokedFailed
	for _, t := range []struct{ token, hint string }{{set.Refresh, "refresh_token"}, {set.Access, "access_token"}} {
		if t.token != "" && b.revokeOne(ctx, asm.RevocationEndpoint, set, t.token, t.hint) {
			outcome = revokedYes
		}
	}
	return outcome
}

// revokeOne posts one RFC 7009 revocation request; true when the server
// answered 200 (it does so for a token it does not know, too).
func (b *Broker) revokeOne(ctx context.Context, endpoint string, set tokenSet, token, hint string) bool {
	form := url.Values{"token": {token}, "token_type_hint": {hint}}
	basic := set.ClientSecret != "" && oauth2.AuthStyle(set.AuthStyle) == oauth2.AuthStyleInHeader
	if !basic {
		form.Set("client_id", set.ClientID)
		if set.ClientSecret != "" {
			form.Set("client_secret", set.ClientSecret)
		}
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		// RFC 6749 2.3.1: each part form-encoded before Basic.
		req.SetBasicAuth(url.QueryEscape(set.ClientID), url.QueryEscape(set.ClientSecret))
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Ended is told of grants the ledger deleted with their holder (a key
// revoked, a person deprovisioned by SCIM): each of this broker's (one
// it can open: its server, its site, its key) is revoked at the
// authorization server that issued it, in the background within the
// bound, and the holder's session to the server ends. It does not
// block. One goroutine per deletion revokes its grants in turn, and at
// most revokeParallel revocations run at once across the broker: a bulk
// deprovisioning queues its revocations rather than opening a
// connection per grant.
func (b *Broker) Ended(rows []ledger.MCPUpstreamToken) {
	var sets []tokenSet
	for _, row := range rows {
		if b.servers[row.Server] == nil || strings.HasPrefix(row.Unit, "c:") {
			continue
		}
		set, err := b.openSet(row.Server, row.Unit, row.Sealed)
		if err != nil {
			continue
		}
		if b.onDisconnect != nil {
			b.onDisconnect(row.Server, row.Unit)
		}
		sets = append(sets, set)
	}
	if len(sets) == 0 {
		return
	}
	go func() {
		for _, set := range sets {
			b.revoking <- struct{}{}
			b.revoke(context.Background(), set)
			<-b.revoking
		}
	}()
}

// Watch has the store tell the broker of grants deleted with their
// holder (Ended), until Close; a store that cannot tell is ignored.
func (b *Broker) Watch(st ledger.Store) {
	w, ok := st.(ledger.MCPUpstreamGoneWatcher)
	if !ok {
		return
	}
	stop := w.WatchMCPUpstreamTokensGone(b.Ended)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		stop()
		return
	}
	b.stops = append(b.stops, stop)
}

// Close ends the broker's watches (a reload replaces the broker).
func (b *Broker) Close() {
	b.mu.Lock()
	stops := b.stops
	b.stops, b.closed = nil, true
	b.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}
