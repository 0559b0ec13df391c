package breaker

import (
	"fmt"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// The defaults of the rules, for a `breaker` block that leaves a rule out.
// They are set so a working agent never meets them: it does not run the
// very same call with the very same result five times in ten turns, it
// does not undo and redo the same edit three times over, and six failed
// turns in a row that fail the same way are a wall, not a test cycle
// (each fix is a successful edit, which breaks the streak).
const (
	DefaultRepeat  = 5
	DefaultCycle   = 3
	DefaultFailing = 6
	// DefaultVelocityCents is $2 a minute, averaged over five minutes:
	// $600 in five hours.
	DefaultVelocityCents = 200
	// DefaultTurns counts a session's model requests, side requests (a
	// title, a command's prefix) included.
	DefaultTurns = 1000
)

// ringSize is how many turns of a conversation are kept: enough for the
// largest window a rule may ask for (MaxRepeat×2, 4×MaxCycle, MaxFailing).
const ringSize = 32

// The largest thresholds, so a rule's window fits in the ring.
const (
	MaxRepeat  = ringSize / 2
	MaxCycle   = ringSize / 4
	MaxFailing = ringSize
)

// velocityMinutes is the span spend velocity is averaged over.
const velocityMinutes = 5

// The patterns a trip names.
const (
	PatternRepeat   = "repeat"
	PatternCycle    = "cycle"
	PatternFailing  = "failing"
	PatternVelocity = "velocity"
	PatternTurns    = "turns"
)

// The actions of a trip.
const (
	ActionWarn  = "warn"
	ActionNudge = "nudge"
	ActionPause = "pause"
	ActionStop  = "stop"
)

// rules are a key's, workspace's or group's thresholds with the defaults
// filled in; 0 is off.
type rules struct {
	repeat, cycle, failing, turns int
	velocityPico                  int64 // per minute
	keyVelocityPico               int64 // per minute, the key's (keyrate.go)
	action                        string
}

func resolve(r *ledger.BreakerRules) rules {
	pick := func(v, def int) int {
		switch {
		case v < 0:
			return 0
		case v == 0:
			return def
		}
		return v
	}
	out := rules{repeat: pick(r.Repeat, DefaultRepeat), cycle: pick(r.Cycle, DefaultCycle), failing: pick(r.Failing, DefaultFailing),
		turns: pick(r.Turns, DefaultTurns), action: r.Action}
	out.repeat, out.cycle, out.failing = min(out.repeat, MaxRepeat), min(out.cycle, MaxCycle), min(out.failing, MaxFailing)
	switch {
	case r.VelocityCents < 0:
	case r.VelocityCents == 0:
		out.velocityPico = DefaultVelocityCents * money.PicoPerCent
	default:
		out.velocityPico = r.VelocityCents * money.PicoPerCent
	}
	out.keyVelocityPico = keyVelocity(r.KeyVelocityCents)
	if out.action == "" {
		out.action = ActionWarn
	}
	return out
}

// Validate checks rules as a Caddyfile or the admin API gives them.
func Validate(r *ledger.BreakerRules) error {
	for _, c := range []struct {
		name   string
		v, max int
	}{{"repeat", r.Repeat, MaxRepeat}, {"cycle", r.Cycle, MaxCycle}, {"failing", r.Failing, MaxFailing}} {
		if c.v > c.max || (c.v > 0 && c.v < 2) {
			return fmt.Errorf("breaker %s: %d is not from 2 to %d (or off)", c.name, c.v, c.max)
		}
	}
	switch r.Action {
	case "", ActionWarn, ActionNudge, ActionPause, ActionStop:
	default:
		return fmt.Errorf("breaker action: %q is not warn, nudge, pause or stop", r.Action)
	}
	return nil
}

// mark is one turn of a conversation as the rules compare it.
type mark struct {
	key   uint64 // print.key; never 0
	fail  uint32 // print.fail
	calls bool
}

// state is a session's watch as its store holds it.
type state struct {
	ring  []mark // the turn's conversation, oldest first
	dup   bool   // the request's tail was seen already: not a new turn
	turns int64
	spent int64 // picodollars
	// window is the spend of the last minutes, by minute.
	window [velocityMinutes]bucket
	status string // "", ActionPause or ActionStop
	// pattern and spentAt are the last trip's, token the resume link's
	// secret while paused.
	pattern string
	token   string
	trips   int64
	vtrip   int64  // the minute of the last velocity trip
	head    uint64 // a conversation's last turn's (link), when held
	// holder is the scope of the session whose trip holds this
	// conversation (hold.go), hold the head of the turn it holds.
	holder string
	hold   uint64
}

type bucket struct{ minute, pico int64 }

// velocity is the spend per minute over the last velocityMinutes.
func (s *state) velocity(minute int64) int64 {
	var sum int64
	for _, b := range s.window {
		if b.minute > minute-velocityMinutes && b.minute <= minute {
			sum += b.pico
		}
	}
	return sum / velocityMinutes
}

// finding is a rule the session's latest turn broke.
type finding struct {
	pattern string
	// count and span: how many times in how many turns (repeat), the
	// cycle's length (cycle), the streak (failing).
	count, span int
}

// detect applies the rules to the session after its latest turn.
func detect(r rules, s *state, minute int64) (finding, bool) {
	if n := len(s.ring); n > 0 {
		last := s.ring[n-1]
		if r.repeat > 0 && last.calls {
			win := s.ring[max(0, n-2*r.repeat):]
			c := 0
			for _, m := range win {
				if m.key == last.key {
					c++
				}
			}
			if c >= r.repeat {
				return finding{pattern: PatternRepeat, count: c, span: len(win)}, true
			}
		}
		if r.cycle > 0 {
			for p := 2; p <= 4; p++ {
				if cycles(s.ring, p, r.cycle) {
					return finding{pattern: PatternCycle, count: r.cycle, span: p}, true
				}
			}
		}
		if r.failing > 0 && n >= r.failing && last.fail != 0 {
			streak := 0
			for i := n - 1; i >= 0 && s.ring[i].fail == last.fail; i-- {
				streak++
			}
			if streak >= r.failing {
				return finding{pattern: PatternFailing, count: streak}, true
			}
		}
	}
	if r.velocityPico > 0 && minute-s.vtrip >= velocityMinutes && s.velocity(minute) >= r.velocityPico {
		return finding{pattern: PatternVelocity}, true
	}
	if r.turns > 0 && s.turns >= int64(r.turns) && s.turns%int64(r.turns) == 0 {
		return finding{pattern: PatternTurns, count: int(s.turns)}, true
	}
	return finding{}, false
}

// cycles reports the ring ending in times repetitions of a sequence of p
// turns that are not all one turn (that is the repeat rule's).
func cycles(ring []mark, p, times int) bool {
	n := len(ring)
	if n < p*times {
		return false
	}
	seq := ring[n-p:]
	distinct := false
	for _, m := range seq[1:] {
		if m.key != seq[0].key {
			distinct = true
		}
	}
	if !distinct {
		return false
	}
	for i := n - p*times; i < n-p; i++ {
		if ring[i].key != ring[i+p].key {
			return false
		}
	}
	return true
}
