package ledger

import (
	"context"
	"fmt"
	"time"
)

// BreakerRules are the thresholds of the agent-run circuit breaker
// (package breaker) for a key, workspace or group. A zero threshold takes
// the breaker's documented default; a negative one turns that rule off.
type BreakerRules struct {
	// Repeat: the same tool call with the same result this many times
	// within the last 2×Repeat turns.
	Repeat int `json:"repeat,omitempty"`
	// Cycle: a sequence of two to four distinct turns repeated this many
	// times in a row (A→B→A→B…).
	Cycle int `json:"cycle,omitempty"`
	// Failing: this many turns in a row whose tool results all failed the
	// same way.
	Failing int `json:"failing,omitempty"`
	// VelocityCents is the spend rate, in cents per minute averaged over
	// five minutes, that trips.
	VelocityCents int64 `json:"velocity_cents,omitempty"`
	// KeyVelocityCents is the spend rate of all a key's requests (a
	// person's, for a key minted for one), whatever their sessions, that
	// trips.
	KeyVelocityCents int64 `json:"key_velocity_cents,omitempty"`
	// Turns is the most turns one session may take.
	Turns int `json:"turns,omitempty"`
	// Action is what a trip does: warn (default), nudge, pause or stop.
	Action string `json:"action,omitempty"`
}

// BreakerTrip is one time the breaker tripped on a session.
type BreakerTrip struct {
	Time      time.Time
	KeyID     string
	Workspace string
	Person    string // the person the key belongs to, when known
	SessionID string
	Agent     string
	Pattern   string // repeat, cycle, failing, velocity, turns
	Action    string // warn, nudge, pause, stop
	Turns     int64  // the session's turns when it tripped
	// SpentPico is the session's spend when it tripped; VelocityPico its
	// spend per minute then; EstimatePico what the loop would have spent
	// in the hour after, at that rate.
	SpentPico, VelocityPico, EstimatePico int64
	// AfterPico is what the session spent after the trip (reports only:
	// read from the usage records).
	AfterPico int64
}

// BreakerStore keeps the breaker's trips: one row per trip, never one per
// turn.
type BreakerStore interface {
	RecordTrip(ctx context.Context, t BreakerTrip) error
	// BreakerTrips lists the trips in [from, to), oldest first, each with
	// what its session spent after it.
	BreakerTrips(ctx context.Context, from, to time.Time) ([]BreakerTrip, error)
}

func (s *sqlStore) RecordTrip(ctx context.Context, t BreakerTrip) error {
	p := s.d.placeholder
	_, err := s.db.ExecContext(ctx, `INSERT INTO breaker_trips (ts_us, key_id, workspace, person, session_id, agent, pattern, action,
turns, spent_pico, velocity_pico, estimate_pico) VALUES (`+p(1)+`, `+p(2)+`, `+p(3)+`, `+p(4)+`, `+p(5)+`, `+p(6)+`, `+p(7)+`, `+p(8)+`, `+
		p(9)+`, `+p(10)+`, `+p(11)+`, `+p(12)+`)`,
		t.Time.UnixMicro(), t.KeyID, t.Workspace, t.Person, t.SessionID, t.Agent, t.Pattern, t.Action,
		t.Turns, t.SpentPico, t.VelocityPico, t.EstimatePico)
	return err
}

func (s *sqlStore) BreakerTrips(ctx context.Context, from, to time.Time) ([]BreakerTrip, error) {
	p := s.d.placeholder
	rows, err := s.db.QueryContext(ctx, `SELECT t.ts_us, t.key_id, t.workspace, t.person, t.session_id, t.agent, t.pattern, t.action,
t.turns, t.spent_pico, t.velocity_pico, t.estimate_pico,
CAST(COALESCE((SELECT SUM(r.cost_pico) FROM usage_records r WHERE r.key_id = t.key_id AND r.session_id = t.session_id AND r.ts_us > t.ts_us), 0) AS BIGINT)
FROM breaker_trips t WHERE t.ts_us >= `+p(1)+` AND t.ts_us < `+p(2)+` ORDER BY t.ts_us`, from.UnixMicro(), to.UnixMicro())
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []BreakerTrip
	for rows.Next() {
		var t BreakerTrip
		var ts int64
		if err := rows.Scan(&ts, &t.KeyID, &t.Workspace, &t.Person, &t.SessionID, &t.Agent, &t.Pattern, &t.Action,
			&t.Turns, &t.SpentPico, &t.VelocityPico, &t.EstimatePico, &t.AfterPico); err != nil {
			return nil, err
		}
		t.Time = time.UnixMicro(ts).UTC()
		out = append(out, t)
	}
	return out, rows.Err()
}

// purgeBreakerTrips deletes the trips before cut (Unix microseconds), with
// the records: a trip's report reads what its session spent from them.
func (s *sqlStore) purgeBreakerTrips(ctx context.Context, cut int64) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM breaker_trips WHERE ts_us < `+s.d.placeholder(1), cut); err != nil {
		return fmt.Errorf("purging breaker trips: %w", err)
	}
	return nil
}
