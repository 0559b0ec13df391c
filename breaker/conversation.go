package breaker

import (
	"context"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/ledger"
)

// The conversation view: a loop that sends each request under a new
// session id (or none) never fills a session's ring, and a session
// stopped "until an admin clears it" would go on under the next id. So a
// request its session cannot watch (it names no session, or its session
// is new) also counts as a turn of its conversation under the key: the
// conversation is named by its history's first entry, as a session's
// conversations are, whatever session id its requests carry, so the same
// rules see every turn of a loop that rotates its ids. A held
// conversation is refused under every session id of the key. For a key
// minted for a person (Turn.Owner), the conversation is the person's, over
// all their keys, so that a new sign-in's key does not evade it either.
//
// Two things keep honest traffic out of it. A session's later turns only
// extend the view, and a turn whose history has no answer of the model
// yet (a session's first) does not join it (it adds nothing to compare),
// so a busy key with many sessions never meets its rules there. And a loop's turns extend one another (print's
// prev is the head of the turn before): a turn that does not extend the
// conversation's last one shows that more than one conversation shares
// its first entry (an app's requests without a session that all start
// with the same instructions), and the view forgets what it counted of
// it, its spend included. A hold refuses only turns that extend it.

// freshTurns is how many first turns of a session also count in its
// conversation's view: a session whose id outlives them is watched as a
// session alone.
const freshTurns = 1

// conversationPrefix starts a conversation's name, as a trip, its resume
// link and the resume command give it.
const conversationPrefix = "conversation-"

// conversationNote ends a conversation's trip's text.
const conversationNote = ", across requests under changing or no session ids"

// ConversationID is the name of the conversation whose history's first
// entry hashes to thread.
func ConversationID(thread uint64) string {
	return conversationPrefix + strconv.FormatUint(thread, 16)
}

// conversationView is the conversation's view under owner (a key id, or
// a person's personOwner): its scope is ledger.SessionScopeID(owner,
// ConversationID(thread)), built in one allocation, as every request of
// a watched key builds it.
func conversationView(owner string, thread uint64) view {
	var buf [128]byte
	b := append(buf[:0], owner...)
	b = append(b, ' ')
	b = append(b, conversationPrefix...)
	b = strconv.AppendUint(b, thread, 16)
	scope := string(b)
	return view{name: scope[len(owner)+1:], scope: scope, conversation: true}
}

// personOwner owns the conversations of a person's keys: a NUL, which no
// key id has, then the person.
func personOwner(person string) string { return "\x00" + person }

// ownerOf is who owns the turn's conversation: the person its key was
// minted for, when known, else the key.
func ownerOf(t *Turn) string {
	if t.Owner != "" {
		return personOwner(t.Owner)
	}
	return t.KeyID
}

// scopeOf is the scope of a session, or of a conversation (named by
// ConversationID) of keyID's person, or else of keyID, for a resume or a
// status that names the key.
func (b *Breaker) scopeOf(keyID, session string) string {
	if (strings.HasPrefix(session, conversationPrefix) || session == KeySpendRate) && b.o.PersonOf != nil {
		if p := b.o.PersonOf(keyID); p != "" {
			return ledger.SessionScopeID(personOwner(p), session)
		}
	}
	return ledger.SessionScopeID(keyID, session)
}

// admitConversation watches the request as a turn of its conversation
// under the key when fresh (its session cannot watch it), and otherwise
// only refuses it when the conversation is held; d is the session
// view's decision.
func (b *Breaker) admitConversation(ctx context.Context, t *Turn, r rules, p print, d Decision, fresh bool) Decision {
	if p.thread == 0 || p.prev == 0 {
		// A history with no answer of the model yet (a session's or a
		// one-shot request's first turn) has nothing to compare, extends
		// no conversation, and would only take a slot in the store (a
		// one-shot app's every request would): the conversation starts
		// with the turn that extends it.
		return d
	}
	v := conversationView(ownerOf(t), p.thread)
	l := link{prev: p.prev, head: p.head}
	if !fresh {
		// A later turn of a watched session goes on the conversation
		// only when it extends the conversation's last turn: then it is
		// that conversation (a loop that keeps an id for a few turns),
		// held with it and paying into its spend; an honest session that
		// merely began with the same first entry is not.
		s, extended, err := b.o.Store.Extend(ctx, v.scope, l, b.o.Now())
		if err != nil {
			b.failed(err)
			return d
		}
		if refusal := b.heldBySession(ctx, t, s, l); refusal != nil {
			d.Refusal = refusal
			return d
		}
		switch {
		case extended && s.status != "":
			d.Refusal = held(t, v, s.status, patternText(s.pattern)+conversationNote, s.spent)
		case extended:
			d.conversation = v.scope
		}
		return d
	}
	s, err := b.o.Store.Turn(ctx, v.scope, p.thread, p.tail, mark{key: p.key, fail: p.fail, calls: p.calls}, l, b.o.Now())
	if err != nil {
		b.failed(err)
		return d
	}
	if refusal := b.heldBySession(ctx, t, s, l); refusal != nil {
		d.Refusal = refusal
		return d
	}
	if s.status != "" && s.head != l.prev && s.head != l.head {
		// A hold refuses the held conversation's next turns (and its last
		// one retried), not another conversation that began with the same
		// first entry.
		return d
	}
	cd := b.decide(ctx, t, r, p, v, s)
	cd.scope, cd.conversation = d.scope, v.scope
	return cd
}
