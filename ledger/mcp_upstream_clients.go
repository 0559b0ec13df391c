package ledger

import "context"

// The OAuth client the gateway registered (RFC 7591) at an auth: oauth
// server's authorization server is kept in mcp_upstream_tokens too, as a
// row whose unit starts "c:" (package mcp/upstreamauth names it: the
// issuer and what the registration was made for), sealed like a grant.
// Every instance, and the next process, then uses the one registration
// instead of registering again: a grant renews only with the client it
// was issued to. No person's or key's unit starts "c:", so the person
// and key listings and deletions never touch these rows.

// MCPUpstreamClientStore keeps the registered clients.
type MCPUpstreamClientStore interface {
	// AddMCPUpstreamToken stores t only when its (server, unit) has no
	// row; it returns the row stored afterwards (another instance's,
	// when that one was first) and whether it was t.
	AddMCPUpstreamToken(ctx context.Context, t MCPUpstreamToken) (MCPUpstreamToken, bool, error)
}

// AddMCPUpstreamToken inserts t unless its row exists.
func (s *sqlStore) AddMCPUpstreamToken(ctx context.Context, t MCPUpstreamToken) (MCPUpstreamToken, bool, error) {
	p := s.d.placeholder
	now := t.UpdatedAt.UnixMicro()
	res, err := s.db.ExecContext(ctx, `INSERT INTO mcp_upstream_tokens (`+upstreamTokenColumns+`) VALUES (`+
		p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, 1, 0, `+p(5)+`, `+p(6)+`) ON CONFLICT (server, unit) DO NOTHING`,
		t.Server, t.Unit, t.Sealed, micros(t.ExpiresAt), now, now)
	if err != nil {
		return MCPUpstreamToken{}, false, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return MCPUpstreamToken{}, false, err
	}
	got, found, err := s.MCPUpstreamToken(ctx, t.Server, t.Unit)
	if err == nil && !found {
		// Deleted between the two statements: the caller's is as good.
		return t, false, nil
	}
	return got, n == 1, err
}
