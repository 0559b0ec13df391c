package breaker

import (
	"context"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
)

// The key's spend rate: a loop can evade every view named by its session
// or its history (a nonce in its first entry makes each request a new
// conversation; rotating ids every few turns thins each view's spend), so
// the spend of all the key's requests (the person's, over all their keys,
// for a key minted for a person) is watched as well, whatever ids and
// histories they carry, against the key_velocity rule alone. A trip holds
// every request of the key (or the person).

// DefaultKeyVelocityCents is $10 a minute, averaged over five minutes:
// five agents at the session default at once.
const DefaultKeyVelocityCents = 1000

// KeySpendRate names the key's spend-rate watch, as a trip, its resume
// link and the resume command give it.
const KeySpendRate = "key-spend-rate"

// keyNote ends a key trip's text.
const keyNote = ", over all of this key's requests, whatever their session ids"

// keyView is the spend-rate view of the turn's owner (ownerOf).
func keyView(t *Turn) view {
	return view{name: KeySpendRate, scope: ledger.SessionScopeID(ownerOf(t), KeySpendRate), key: true}
}

// admitKey refuses the request when its key's spend-rate view is held or
// trips now; scope is the view's, for Done, "" when the rule is off.
func (b *Breaker) admitKey(ctx context.Context, t *Turn, r rules, p print) (d Decision, scope string) {
	if r.keyVelocityPico <= 0 {
		return Decision{}, ""
	}
	v := keyView(t)
	s, found, err := b.o.Store.Peek(ctx, v.scope)
	if err != nil {
		b.failed(err)
		return Decision{}, v.scope
	}
	if !found || (s.status == "" && s.velocity(b.o.Now().Unix()/60) < r.keyVelocityPico) {
		return Decision{}, v.scope // the common case, decided without decide's work
	}
	return b.decide(ctx, t, rules{velocityPico: r.keyVelocityPico, action: r.action}, p, v, s), v.scope
}

// keyVelocity is the key_velocity rule in picodollars a minute: v cents,
// 0 for the default, off when negative.
func keyVelocity(v int64) int64 {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return DefaultKeyVelocityCents * money.PicoPerCent
	}
	return v * money.PicoPerCent
}
