package breaker

import (
	"context"
	"strings"

	"github.com/modelgate/modelgate/apierror"
)

// A session's pause or stop holds its conversation too. The turn that
// tripped a session, sent again under a new session id (or none), would
// otherwise be a fresh session's first turn: the session's own hold is
// keyed by its id, and the conversation view has counted too few of the
// loop's turns to trip on it. So the trip puts the conversation (named
// by its history's first entry, under the key or its person, as the
// conversation view names it) under the session's hold at the tripping
// turn: a turn that repeats or extends it, under any session id, is
// refused as the session's, for as long as the session is paused or
// stopped. The hold keeps no state of its own: resuming the session (its
// link, the dashboard, the command) or its expiry lifts it. Another
// conversation, or one that merely began with the same first entry
// (its turns do not extend the held one), is not held.

// holdConversation puts the conversation of the turn that tripped the
// session in view v under the session's hold.
func (b *Breaker) holdConversation(ctx context.Context, t *Turn, p print, v view) {
	if v.conversation || v.key || p.thread == 0 || p.head == 0 {
		return
	}
	if err := b.o.Store.Hold(ctx, conversationView(ownerOf(t), p.thread).scope, v.scope, p.head, b.o.Now()); err != nil {
		b.failed(err)
	}
}

// heldBySession is the refusal of a turn of a conversation held by a
// session's trip (s is the conversation's state after the turn, l the
// turn's link), while that session is still held; nil otherwise.
func (b *Breaker) heldBySession(ctx context.Context, t *Turn, s state, l link) *apierror.Error {
	if s.holder == "" || s.hold != l.head {
		return nil
	}
	hs, found, err := b.o.Store.Peek(ctx, s.holder)
	if err != nil {
		b.failed(err)
		return nil
	}
	if !found || hs.status == "" {
		return nil
	}
	key, name, _ := strings.Cut(s.holder, " ")
	as := *t
	as.KeyID = key
	return held(&as, view{name: name, scope: s.holder}, hs.status, patternText(hs.pattern), hs.spent)
}
