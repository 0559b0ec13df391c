package ledger

import (
	"testing"
	"time"
)

// TestPeriodBoundsOnceAsStartAndEnd holds PeriodBounds to PeriodStart
// and periodEnd every few hours over years that cross leap days, year ends
// and weekdays, in a zone other than UTC too.
func TestPeriodBoundsOnceAsStartAndEnd(t *testing.T) {
	zone := time.FixedZone("UTC-7", -7*3600)
	for _, period := range []string{"daily", "weekly", "monthly", "total", ""} {
		for at := time.Date(2023, 12, 20, 0, 0, 0, 0, time.UTC); at.Year() < 2026; at = at.Add(5*time.Hour + 17*time.Minute) {
			for _, tt := range []time.Time{at, at.In(zone)} {
				start, end := PeriodBounds(period, tt)
				if ws, we := PeriodStart(period, tt), periodEnd(period, tt); !start.Equal(ws) || !end.Equal(we) || start.Location() != ws.Location() {
					t.Fatalf("%s at %s: got %s – %s, want %s – %s", period, tt, start, end, ws, we)
				}
			}
		}
	}
}

// periodEnd is when the period holding t ends, from PeriodStart by the
// calendar (zero for a total): PeriodBounds' definition, which it finds
// with one date.
func periodEnd(period string, t time.Time) time.Time {
	s := PeriodStart(period, t)
	switch period {
	case "daily":
		return s.AddDate(0, 0, 1)
	case "weekly":
		return s.AddDate(0, 0, 7)
	case "monthly":
		return s.AddDate(0, 1, 0)
	}
	return time.Time{}
}
