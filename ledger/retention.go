package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// RecordPurger is implemented by stores that can delete old usage records:
// the `retention` option of the modelgate app. The roll-ups (usage_rollup,
// usage_rollup_day) are kept, so reports over whole hours and days of any
// age still read them; what needs the records themselves (minute buckets,
// the sessions and Claude Code reports, Query) ends at the cutoff.
type RecordPurger interface {
	// PurgeRecords deletes the records with Time before before and says
	// how many went. The budget spend of sessions last active before
	// then goes too: session ids are the client's choice, a fresh one per
	// run, so their rows would otherwise grow without bound.
	PurgeRecords(ctx context.Context, before time.Time) (int64, error)
}

// purgeChunk bounds the records one delete removes, so that the writer's
// inserts (each bounded at 5 s) never wait behind one long delete of years
// of records.
const purgeChunk = 10000

func (s *sqlStore) PurgeRecords(ctx context.Context, before time.Time) (int64, error) {
	cut := before.UnixMicro()
	var total int64
	for {
		// The chunk ends at the purgeChunk-th oldest record before the
		// cutoff; records sharing its microsecond go with it, so every
		// round deletes at least one record.
		var last int64
		err := s.db.QueryRowContext(ctx, `SELECT ts_us FROM usage_records WHERE ts_us < `+s.d.placeholder(1)+
			` ORDER BY ts_us LIMIT 1 OFFSET `+strconv.Itoa(purgeChunk-1), cut).Scan(&last)
		end := cut
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return total, err
		default:
			end = last + 1
		}
		res, err := s.db.ExecContext(ctx, `DELETE FROM usage_records WHERE ts_us < `+s.d.placeholder(1), end)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
		if end == cut {
			if err := s.purgeWork(ctx, cut); err != nil {
				return total, err
			}
			if err := s.purgeBreakerTrips(ctx, cut); err != nil {
				return total, err
			}
			if err := s.purgeCountedReports(ctx, cut); err != nil {
				return total, err
			}
			return total, s.purgeSessionSpend(ctx, cut)
		}
	}
}

// purgeSessionSpend deletes, in chunks, the budget spend rows of sessions
// not spent in since cut (Unix microseconds). A session idle past the
// retention has no records left either; were it resumed, its session
// budget would start again from 0, as a new session's does.
func (s *sqlStore) purgeSessionSpend(ctx context.Context, cut int64) error {
	p := s.d.placeholder
	// A session has one row (period total), so its scope_id names it.
	q := `DELETE FROM budget_spend WHERE scope = '` + ScopeSession + `' AND updated_us < ` + p(1) + ` AND scope_id IN (
	SELECT scope_id FROM budget_spend WHERE scope = '` + ScopeSession + `' AND updated_us < ` + p(2) + ` LIMIT ` + strconv.Itoa(purgeChunk) + `)`
	for {
		res, err := s.db.ExecContext(ctx, q, cut, cut)
		if err != nil {
			return fmt.Errorf("purging session spend: %w", err)
		}
		if n, _ := res.RowsAffected(); n < purgeChunk {
			return nil
		}
	}
}
