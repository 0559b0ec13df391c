package ledger

import (
	"context"
	"time"
)

// GrantRedeemer keeps the one-use grants that were used (an MCP client's
// authorization code, a refresh token: sealed, so any instance accepts
// them) in the database every instance shares, so that each is good once
// across instances, not once per instance.
type GrantRedeemer interface {
	// RedeemGrant marks grant id used until expires, when it can no longer
	// be presented; false when it was used already, here or on another
	// instance. Rows past their expiry are dropped as it goes.
	RedeemGrant(ctx context.Context, id string, expires, now time.Time) (bool, error)
	// ReleaseGrant gives back a grant redeemed for a request that then
	// failed for a passing reason (the provider or the database did not
	// answer), so that its client may present it again.
	ReleaseGrant(ctx context.Context, id string) error
}

// redeemedMargin is how long past its expiry a used grant's row is kept:
// an instance whose clock runs behind still takes the grant as unexpired
// for that long, and must still find it used.
const redeemedMargin = 10 * time.Minute

const redeemedGrantsMigration = `CREATE TABLE redeemed_grants (
	id TEXT PRIMARY KEY,
	expires_us BIGINT NOT NULL
);
CREATE INDEX redeemed_grants_expires ON redeemed_grants (expires_us)`

// RedeemGrant implements GrantRedeemer: the insert of the grant's id is
// the test, so two instances redeeming one grant at once cannot both win.
func (s *sqlStore) RedeemGrant(ctx context.Context, id string, expires, now time.Time) (bool, error) {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM redeemed_grants WHERE expires_us <= `+s.d.placeholder(1), now.Add(-redeemedMargin).UnixMicro()); err != nil {
		return false, err
	}
	res, err := s.db.ExecContext(ctx, `INSERT INTO redeemed_grants (id, expires_us) VALUES (`+s.d.placeholder(1)+`, `+s.d.placeholder(2)+
		`) ON CONFLICT (id) DO NOTHING`, id, expires.UnixMicro())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ReleaseGrant implements GrantRedeemer.
func (s *sqlStore) ReleaseGrant(ctx context.Context, id string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM redeemed_grants WHERE id = `+s.d.placeholder(1), id)
	return err
}
