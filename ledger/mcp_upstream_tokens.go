package ledger

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"
)

// A person's own OAuth token to an auth: oauth MCP server is one row of
// mcp_upstream_tokens, keyed (server, unit): the unit is the person, or
// the key for a key of no one (package mcp/upstreamauth decides). The
// ledger only ever holds the row sealed (AES-GCM under the Caddyfile's
// mcp_token_key, bound to its server and unit): Sealed is ciphertext.
//
// Every change is conditional on the row's version, so two instances
// refreshing one token cannot both store what they got: a refresh first
// claims the row (ClaimMCPUpstreamRefresh: version+1 and a lease, only
// when nobody else holds one), then stores the new token only over the
// version it claimed (SwapMCPUpstreamToken). An upstream that rotates
// refresh tokens therefore never sees the old one used twice, and the
// rotated one is never overwritten by a loser's.

// MCPUpstreamToken is one row.
type MCPUpstreamToken struct {
	Server, Unit string
	// Sealed is the token set, encrypted; the ledger cannot read it.
	Sealed string
	// ExpiresAt is when the access token lapses (zero: unknown).
	ExpiresAt time.Time
	Version   int64
	// RefreshUntil is the lease of the instance refreshing the token.
	RefreshUntil         time.Time
	CreatedAt, UpdatedAt time.Time
}

// ErrTokenChanged is returned by the conditional writes when the row's
// version moved (another instance wrote it) or the row is gone.
var ErrTokenChanged = errors.New("the token row changed")

// MCPUpstreamTokenStore is what the per-person upstream credentials need
// of the ledger.
type MCPUpstreamTokenStore interface {
	MCPUpstreamToken(ctx context.Context, server, unit string) (MCPUpstreamToken, bool, error)
	// PutMCPUpstreamToken stores a new connection, replacing any row
	// (a person connecting again); its version is one past the old.
	PutMCPUpstreamToken(ctx context.Context, t MCPUpstreamToken) (MCPUpstreamToken, error)
	// ClaimMCPUpstreamRefresh takes the refresh lease on the row at
	// version for lease, judged by the database's clock (so instances
	// whose clocks disagree still hold one lease at a time);
	// ErrTokenChanged when the version moved or another instance's lease
	// runs.
	ClaimMCPUpstreamRefresh(ctx context.Context, server, unit string, version int64, lease time.Duration) (MCPUpstreamToken, error)
	// SwapMCPUpstreamToken stores t over the row at version, ending the
	// lease; ErrTokenChanged when the version moved.
	SwapMCPUpstreamToken(ctx context.Context, t MCPUpstreamToken, version int64) (MCPUpstreamToken, error)
	DeleteMCPUpstreamToken(ctx context.Context, server, unit string) (bool, error)
	// DeleteMCPUpstreamTokenAt removes the row only at version (a grant
	// the refresh that claimed that version found dead); false when the
	// row moved on (the person connected again meanwhile) or is gone.
	DeleteMCPUpstreamTokenAt(ctx context.Context, server, unit string, version int64) (bool, error)
	// MCPUpstreamTokensOf lists unit's rows (the dashboard's connected
	// servers).
	MCPUpstreamTokensOf(ctx context.Context, unit string) ([]MCPUpstreamToken, error)
	// MCPUpstreamKeyTokens lists the rows of keys of no one (units
	// "k:..."): an admin's view of which shared keys act as whom.
	MCPUpstreamKeyTokens(ctx context.Context) ([]MCPUpstreamToken, error)
	// DeleteMCPUpstreamTokensOfPerson removes every grant of the person
	// whose email (compared case-insensitively) or subject is given (SCIM
	// deprovisioning); it returns how many. A revoked key's grants go
	// with the key (UpdateKey).
	DeleteMCPUpstreamTokensOfPerson(ctx context.Context, email, subject string) (int, error)
	// UseMCPUpstreamLink records a connect link's nonce as used; false
	// when it was used before. Expired nonces are deleted on the way.
	UseMCPUpstreamLink(ctx context.Context, nonce string, expires, now time.Time) (bool, error)
}

const upstreamTokenColumns = `server, unit, sealed, expires_us, version, refresh_until_us, created_us, updated_us`

func scanUpstreamToken(row interface{ Scan(...any) error }) (MCPUpstreamToken, error) {
	var t MCPUpstreamToken
	var exp, until, created, updated int64
	err := row.Scan(&t.Server, &t.Unit, &t.Sealed, &exp, &t.Version, &until, &created, &updated)
	if exp > 0 {
		t.ExpiresAt = time.UnixMicro(exp).UTC()
	}
	if until > 0 {
		t.RefreshUntil = time.UnixMicro(until).UTC()
	}
	t.CreatedAt, t.UpdatedAt = time.UnixMicro(created).UTC(), time.UnixMicro(updated).UTC()
	return t, err
}

// MCPUpstreamToken reads one row; found is false when there is none.
func (s *sqlStore) MCPUpstreamToken(ctx context.Context, server, unit string) (MCPUpstreamToken, bool, error) {
	p := s.d.placeholder
	t, err := scanUpstreamToken(s.db.QueryRowContext(ctx, `SELECT `+upstreamTokenColumns+` FROM mcp_upstream_tokens WHERE server = `+p(1)+` AND unit = `+p(2), server, unit))
	if errors.Is(err, sql.ErrNoRows) {
		return MCPUpstreamToken{}, false, nil
	}
	return t, err == nil, err
}

// PutMCPUpstreamToken stores a new connection over any old one.
func (s *sqlStore) PutMCPUpstreamToken(ctx context.Context, t MCPUpstreamToken) (MCPUpstreamToken, error) {
	p := s.d.placeholder
	now := t.UpdatedAt.UnixMicro()
	// One statement on both databases: an upsert that bumps the version,
	// so a refresh in flight over the old row cannot store over the new.
	_, err := s.db.ExecContext(ctx, `INSERT INTO mcp_upstream_tokens (`+upstreamTokenColumns+`) VALUES (`+
		p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, 1, 0, `+p(5)+`, `+p(6)+`)
ON CONFLICT (server, unit) DO UPDATE SET sealed = excluded.sealed, expires_us = excluded.expires_us,
	version = mcp_upstream_tokens.version + 1, refresh_until_us = 0, updated_us = excluded.updated_us`,
		t.Server, t.Unit, t.Sealed, micros(t.ExpiresAt), now, now)
	if err != nil {
		return MCPUpstreamToken{}, err
	}
	got, _, err := s.MCPUpstreamToken(ctx, t.Server, t.Unit)
	return got, err
}

// ClaimMCPUpstreamRefresh takes the refresh lease (see the type): both
// the lease's end and the check against a running one use the
// database's clock, never the caller's.
func (s *sqlStore) ClaimMCPUpstreamRefresh(ctx context.Context, server, unit string, version int64, lease time.Duration) (MCPUpstreamToken, error) {
	p := s.d.placeholder
	now := s.dbNowMicros()
	res, err := s.db.ExecContext(ctx, `UPDATE mcp_upstream_tokens SET version = version + 1, refresh_until_us = `+now+` + `+p(1)+
		` WHERE server = `+p(2)+` AND unit = `+p(3)+` AND version = `+p(4)+` AND refresh_until_us < `+now,
		lease.Microseconds(), server, unit, version)
	return s.afterConditional(ctx, res, err, server, unit)
}

// dbNowMicros is the database's clock in Unix microseconds, as SQL.
func (s *sqlStore) dbNowMicros() string {
	if s.d.name == "postgres" {
		return `CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)`
	}
	return `CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)`
}

// SwapMCPUpstreamToken stores t over the row at version.
func (s *sqlStore) SwapMCPUpstreamToken(ctx context.Context, t MCPUpstreamToken, version int64) (MCPUpstreamToken, error) {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `UPDATE mcp_upstream_tokens SET sealed = `+p(1)+`, expires_us = `+p(2)+`, version = version + 1, refresh_until_us = 0, updated_us = `+p(3)+
		` WHERE server = `+p(4)+` AND unit = `+p(5)+` AND version = `+p(6),
		t.Sealed, micros(t.ExpiresAt), t.UpdatedAt.UnixMicro(), t.Server, t.Unit, version)
	return s.afterConditional(ctx, res, err, t.Server, t.Unit)
}

// afterConditional reads the row back after a conditional UPDATE, or
// says it did not apply.
func (s *sqlStore) afterConditional(ctx context.Context, res sql.Result, err error, server, unit string) (MCPUpstreamToken, error) {
	if err != nil {
		return MCPUpstreamToken{}, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return MCPUpstreamToken{}, err
	}
	if n == 0 {
		return MCPUpstreamToken{}, ErrTokenChanged
	}
	t, found, err := s.MCPUpstreamToken(ctx, server, unit)
	if err == nil && !found {
		err = ErrTokenChanged
	}
	return t, err
}

// DeleteMCPUpstreamToken removes a connection (a disconnect, or a token
// the upstream no longer renews).
func (s *sqlStore) DeleteMCPUpstreamToken(ctx context.Context, server, unit string) (bool, error) {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_upstream_tokens WHERE server = `+p(1)+` AND unit = `+p(2), server, unit)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteMCPUpstreamTokenAt removes the row at version only.
func (s *sqlStore) DeleteMCPUpstreamTokenAt(ctx context.Context, server, unit string, version int64) (bool, error) {
	p := s.d.placeholder
	res, err := s.db.ExecContext(ctx, `DELETE FROM mcp_upstream_tokens WHERE server = `+p(1)+` AND unit = `+p(2)+` AND version = `+p(3), server, unit, version)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// DeleteMCPUpstreamTokensOfPerson removes a person's grants (see the
// type); an empty email or subject matches nothing.
func (s *sqlStore) DeleteMCPUpstreamTokensOfPerson(ctx context.Context, email, subject string) (int, error) {
	p := s.d.placeholder
	byEmail, bySubject, byIssuerSubject := "", "", "" // no unit is empty
	if email != "" {
		byEmail = strings.ToLower("p:" + email)
	}
	if subject != "" {
		bySubject = "p:" + subject
		// A person's unit "s:<issuer> <subject>", of any issuer (an
		// issuer has no space).
		byIssuerSubject = `s:% ` + likeEscaper.Replace(subject)
	}
	// The unit's end is compared too: SQLite's LIKE ignores ASCII case,
	// and a subject is case-sensitive (another person's "00U1").
	gone, err := s.upstreamTokens(ctx, s.db, `DELETE FROM mcp_upstream_tokens WHERE LOWER(unit) = `+p(1)+` OR unit = `+p(2)+
		` OR (unit LIKE `+p(3)+` ESCAPE '\' AND SUBSTR(unit, LENGTH(unit) - LENGTH(CAST(`+p(4)+` AS TEXT)) + 1) = `+p(5)+`)`+
		` RETURNING `+upstreamTokenColumns, byEmail, bySubject, byIssuerSubject, subject, subject)
	if err != nil {
		return 0, err
	}
	s.gone.tell(gone)
	return len(gone), nil
}

// likeEscaper makes text match itself in a LIKE pattern with ESCAPE '\'.
var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// deleteKeyTokens removes the grants of key id (a key of no one's unit),
// in tx: a revoked key's holders must not keep acting upstream as the
// admin who connected it. It returns them, for the watchers once tx
// commits.
func (s *sqlStore) deleteKeyTokens(ctx context.Context, tx *sql.Tx, id string) ([]MCPUpstreamToken, error) {
	return s.upstreamTokens(ctx, tx, `DELETE FROM mcp_upstream_tokens WHERE unit = `+s.d.placeholder(1)+` RETURNING `+upstreamTokenColumns, "k:"+id)
}

// MCPUpstreamTokensOf lists unit's rows by server.
func (s *sqlStore) MCPUpstreamTokensOf(ctx context.Context, unit string) ([]MCPUpstreamToken, error) {
	return s.upstreamTokens(ctx, s.db, `SELECT `+upstreamTokenColumns+` FROM mcp_upstream_tokens WHERE unit = `+s.d.placeholder(1)+` ORDER BY server`, unit)
}

// MCPUpstreamKeyTokens lists the key units' rows by unit and server.
func (s *sqlStore) MCPUpstreamKeyTokens(ctx context.Context) ([]MCPUpstreamToken, error) {
	return s.upstreamTokens(ctx, s.db, `SELECT `+upstreamTokenColumns+` FROM mcp_upstream_tokens WHERE unit LIKE 'k:%' ORDER BY unit, server`)
}

// upstreamTokens runs query (a SELECT, or a DELETE … RETURNING) and reads
// its rows.
func (s *sqlStore) upstreamTokens(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, query string, args ...any) ([]MCPUpstreamToken, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []MCPUpstreamToken
	for rows.Next() {
		t, err := scanUpstreamToken(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// UseMCPUpstreamLink records nonce; the primary key makes the second use
// on any instance fail.
func (s *sqlStore) UseMCPUpstreamLink(ctx context.Context, nonce string, expires, now time.Time) (bool, error) {
	p := s.d.placeholder
	if _, err := s.db.ExecContext(ctx, `DELETE FROM mcp_upstream_links WHERE expires_us < `+p(1), now.UnixMicro()); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO mcp_upstream_links (nonce, expires_us) VALUES (`+p(1)+`, `+p(2)+`) ON CONFLICT (nonce) DO NOTHING`, nonce, expires.UnixMicro())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
