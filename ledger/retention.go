package ledger

import (
	"context"
	"database/sql"
	"errors"
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
	// how many went.
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
			return total, nil
		}
	}
}
