// Package breaker is the circuit breaker for agent runs: it watches each
// coding-agent session turn by turn and trips on a loop (the same tool call
// with the same result again and again, a short cycle of turns, a streak
// of tool calls failing the same way) or a runaway (spend per minute,
// turns per session). A trip warns in the team chat, nudges the agent
// with a note in its next request, pauses the session until someone
// resumes it, or stops it until an admin clears it.
//
// It is a step of the gateway's core, not of any one adapter: Admit takes
// the request's client format, body, session and caller as plain values
// and returns a decision; Done takes what the answer cost. Per turn it
// reads the history's tail (the previous answer's tool calls and their
// results arrive in the next request), keeps hashes only, and makes no
// upstream call and no database write: its state is in memory, or in
// Redis when instances share one (Store).
package breaker

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/modelgate/modelgate/apierror"
	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
)

// ResumePath is where a resume link points: GET shows what is paused and
// a button, POST resumes. The link's token is its only credential.
const ResumePath = "/modelgate/breaker/resume"

// Turn is one request of an agent session, as the breaker sees it.
type Turn struct {
	Format Format
	Body   []byte
	// Session is the agent's session id; without one only the
	// conversation under the key is watched.
	Session string
	KeyID   string
	// Workspace, Person, Agent and Repo name the run in a trip's messages
	// (Person and Repo when known).
	Workspace, Person, Agent, Repo string
	// Owner is the person the key was minted for (policy.Identity's
	// Owner), when known: a conversation is then watched as the person's,
	// over all their keys (conversation.go).
	Owner string
	// Rules are the thresholds of the caller's key, workspace or group;
	// nil: the session is not watched.
	Rules *ledger.BreakerRules
}

// Decision is what the breaker decided for a request.
type Decision struct {
	// Refusal, when set, is the answer: the session is paused or
	// stopped. The door writes it in the caller's error family.
	Refusal *apierror.Error
	// Body, when set, is the request to send instead: the history with
	// the breaker's note (action nudge).
	Body []byte
	// scope names the session for Done, conversation the conversation
	// under the key when the request joined its watch; "" when not
	// watched.
	scope, conversation string
	// key is the key's spend-rate view (keyrate.go); "" when off.
	key string
}

// Trip is one trip, as the gateway's metrics and traces see it.
type Trip struct {
	Pattern, Action   string
	KeyID, Workspace  string
	SessionID, Agent  string
	SpentPico         int64
	VelocityPico      int64 // per minute, over the last five
	EstimatePico      int64 // what the next hour at that rate would cost
	Turns             int64
	Time              time.Time
	Person, Repo, URL string
}

// Options are a Breaker's collaborators; every one may be left out.
type Options struct {
	// Store holds the sessions; nil: in this process.
	Store Store
	// Post sends a line to the team chat (the alerts webhook); nil: no
	// chat messages.
	Post func(ctx context.Context, text string) error
	// PublicURL is the gateway's address as people's browsers reach it
	// (https://gateway.example.com), configured: the base of a pause's
	// resume link. Never the request's Host, which the caller chooses:
	// a forged one would put a link to another site in the team chat.
	// "": the chat line gives the CLI command alone.
	PublicURL string
	// Trips is where trips are recorded (the ledger database); nil or a
	// nil result: not recorded.
	Trips func() ledger.BreakerStore
	// Audit receives a trip and a resume as audit entries.
	Audit audit.Recorder
	// Names gives a runtime key's name by id, for messages.
	Names func(id string) string
	// Owner gives the person a key was minted for (its email), for a
	// trip of a request that did not name one; nil or "": unknown.
	Owner func(keyID string) string
	// PersonOf gives the person a key was minted for as Turn.Owner names
	// them, so that a resume naming a person's key finds their
	// conversation; nil or "": conversations are the key's.
	PersonOf func(keyID string) string
	// OnTrip is called on the instance that tripped a session (a
	// Prometheus counter, an OpenTelemetry event).
	OnTrip func(Trip)
	// Failed reports a store that did not answer: the request went on
	// unwatched (the breaker never refuses because it failed).
	Failed func(error)
	Now    func() time.Time
}

// Breaker watches sessions. A nil *Breaker watches nothing.
type Breaker struct {
	o     Options
	queue chan tripEvent
	// trips counts this instance's trips by pattern and action.
	trips [numPatterns][numActions]atomic.Int64
}

const numPatterns, numActions = 5, 4

// Kinds are every pattern a trip names and every action it takes.
func Kinds() (patterns, actions []string) {
	return []string{PatternRepeat, PatternCycle, PatternFailing, PatternVelocity, PatternTurns},
		[]string{ActionWarn, ActionNudge, ActionPause, ActionStop}
}

func kindIndex(pattern, action string) (int, int, bool) {
	ps, as := Kinds()
	i, j := slices.Index(ps, pattern), slices.Index(as, action)
	return i, j, i >= 0 && j >= 0
}

func (b *Breaker) counted(t Trip) {
	if i, j, ok := kindIndex(t.Pattern, t.Action); ok {
		b.trips[i][j].Add(1)
	}
}

// TripCount is how many trips of pattern with action this instance
// made: the Prometheus counter's value.
func (b *Breaker) TripCount(pattern, action string) int64 {
	i, j, ok := kindIndex(pattern, action)
	if b == nil || !ok {
		return 0
	}
	return b.trips[i][j].Load()
}

// tripEvent is a trip with its chat line, for Run.
type tripEvent struct {
	trip Trip
	text string
}

// New builds a breaker; Run must run for its trips to be posted,
// recorded and audited.
func New(o Options) *Breaker {
	if o.Store == nil {
		o.Store = NewMemory(50_000)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Audit == nil {
		o.Audit = audit.Discard
	}
	return &Breaker{o: o, queue: make(chan tripEvent, 256)}
}

// Admit counts the request as a turn of its session, and of its
// conversation under the key when the session cannot watch it (see
// conversation.go), and decides it.
func (b *Breaker) Admit(ctx context.Context, t *Turn) Decision {
	if b == nil || t.Rules == nil {
		return Decision{}
	}
	r := resolve(t.Rules)
	p := fingerprint(t.Format, t.Body)
	kd, key := b.admitKey(ctx, t, r, p)
	if kd.Refusal != nil || kd.Body != nil {
		return kd
	}
	d := b.admitSession(ctx, t, r, p)
	if d.Refusal == nil {
		d.key = key
	}
	return d
}

// admitSession counts the request as a turn of its session, and of its
// conversation under the key when the session cannot watch it.
func (b *Breaker) admitSession(ctx context.Context, t *Turn, r rules, p print) Decision {
	var d Decision
	fresh := true
	if t.Session != "" {
		v := view{name: t.Session, scope: ledger.SessionScopeID(t.KeyID, t.Session)}
		s, err := b.o.Store.Turn(ctx, v.scope, p.thread, p.tail, mark{key: p.key, fail: p.fail, calls: p.calls}, link{}, b.o.Now())
		if err != nil {
			b.failed(err)
			return Decision{}
		}
		d = b.decide(ctx, t, r, p, v, s)
		if d.Refusal != nil || d.Body != nil {
			return d
		}
		fresh = s.turns <= freshTurns
	}
	return b.admitConversation(ctx, t, r, p, d, fresh)
}

// view is what the breaker watches a turn as: a session, or a
// conversation under its key (whatever session id its requests carry).
type view struct {
	// name is the session id, or the conversation's (ConversationID),
	// as messages, links and the resume command give it.
	name, scope  string
	conversation bool
	key          bool // the key's spend rate (keyrate.go)
}

// decide applies the rules to a view's state after the turn s counted,
// and acts on a trip.
func (b *Breaker) decide(ctx context.Context, t *Turn, r rules, p print, v view, s state) Decision {
	d := Decision{scope: v.scope}
	if s.status != "" {
		d.Refusal = held(t, v, s.status, patternText(s.pattern), s.spent)
		return d
	}
	if s.dup {
		return d
	}
	now := b.o.Now()
	minute := now.Unix() / 60
	f, ok := detect(r, &s, minute)
	if !ok {
		return d
	}
	ts := tripState{pattern: f.pattern}
	switch r.action {
	case ActionPause:
		ts.status, ts.token = ActionPause, newToken()
	case ActionStop:
		ts.status = ActionStop
	}
	if f.pattern == PatternVelocity {
		ts.vtrip = minute
	}
	won, err := b.o.Store.Trip(ctx, v.scope, p.thread, s.trips, ts)
	if err != nil {
		b.failed(err)
		return d
	}
	if !won {
		// Another instance tripped the session at the same turn: its
		// trip is the one told and acted on.
		return d
	}
	vel := s.velocity(minute)
	person := t.Person
	if person == "" && b.o.Owner != nil {
		person = b.o.Owner(t.KeyID)
	}
	trip := Trip{Pattern: f.pattern, Action: r.action, KeyID: t.KeyID, Workspace: t.Workspace, SessionID: v.name, Agent: t.Agent,
		SpentPico: s.spent, VelocityPico: vel, EstimatePico: min(ledger.MaxCost, vel*60), Turns: s.turns, Time: now, Person: person, Repo: t.Repo}
	what := describe(f, p.tool, r)
	if v.conversation {
		what += conversationNote
	}
	if v.key {
		what += keyNote
	}
	if base := strings.TrimRight(b.o.PublicURL, "/"); ts.token != "" && base != "" {
		trip.URL = base + ResumePath + "?" + url.Values{"k": {t.KeyID}, "s": {v.name}, "t": {ts.token}}.Encode()
	}
	b.counted(trip)
	trace.SpanFromContext(ctx).AddEvent("modelgate.breaker.trip", trace.WithAttributes(
		attribute.String("modelgate.breaker.pattern", trip.Pattern), attribute.String("modelgate.breaker.action", trip.Action),
		attribute.String("session.id", trip.SessionID), attribute.Int64("modelgate.breaker.turns", trip.Turns),
		attribute.Int64("modelgate.breaker.spent_pico", trip.SpentPico)))
	if b.o.OnTrip != nil {
		b.o.OnTrip(trip)
	}
	select {
	case b.queue <- tripEvent{trip, chatLine(trip, what, b.name(t.KeyID))}:
	default:
	}
	switch r.action {
	case ActionNudge:
		if body, err := nudged(t.Format, t.Body, nudgeNote(what)); err == nil {
			d.Body = body
		}
	case ActionPause, ActionStop:
		d.Refusal = held(t, v, r.action, what, s.spent)
		b.holdConversation(ctx, t, p, v)
	}
	return d
}

// Done adds what a request of the session cost; d is its Admit's.
func (b *Breaker) Done(ctx context.Context, d Decision, costPico int64) {
	if b == nil || costPico <= 0 || d.Refusal != nil {
		return
	}
	ctx = context.WithoutCancel(ctx)
	for _, scope := range [3]string{d.scope, d.conversation, d.key} {
		if scope == "" {
			continue
		}
		if err := b.o.Store.Spend(ctx, scope, costPico, b.o.Now()); err != nil {
			b.failed(err)
		}
	}
}

// Resume clears a session's pause with its link's token, or, with token
// "", as an admin (a stop too). actor names who resumed, for the audit
// log. It reports the status the session had and whether it is clear.
func (b *Breaker) Resume(ctx context.Context, keyID, session, token, actor string) (was string, ok bool, err error) {
	if b == nil {
		return "", false, nil
	}
	was, ok, err = b.o.Store.Resume(ctx, b.scopeOf(keyID, session), token)
	if err == nil && ok {
		b.o.Audit.Record(ctx, audit.Event{Time: b.o.Now(), Actor: actor, Action: "breaker.resume", Target: session,
			Fields: map[string]string{"api_key_id": keyID, "was": was}})
	}
	return was, ok, err
}

// Status is a session's breaker state, as the sessions API shows it.
type Status struct {
	// State is "watching", "paused" or "stopped".
	State string `json:"state"`
	// Pattern is the last trip's; Trips how many there were.
	Pattern string `json:"last_pattern,omitempty"`
	Trips   int64  `json:"trips"`
	Turns   int64  `json:"turns"`
}

// LinkStatus is Status for the holder of a resume link: ok only while
// token is the session's current pause's, so that a guessed link learns
// nothing of a session (whether it is paused, and why).
func (b *Breaker) LinkStatus(ctx context.Context, keyID, session, token string) (st Status, ok bool, err error) {
	if b == nil {
		return Status{}, false, nil
	}
	s, found, err := b.o.Store.Peek(ctx, b.scopeOf(keyID, session))
	if err != nil || !found || s.token == "" || !tokenEqual(s.token, token) {
		return Status{}, false, err
	}
	return b.Status(ctx, keyID, session)
}

// Status is the session's state; ok is false for a session the breaker
// does not know (never watched, or idle past a day).
func (b *Breaker) Status(ctx context.Context, keyID, session string) (st Status, ok bool, err error) {
	if b == nil {
		return Status{}, false, nil
	}
	s, found, err := b.o.Store.Peek(ctx, b.scopeOf(keyID, session))
	if err != nil || !found {
		return Status{}, false, err
	}
	st = Status{State: "watching", Pattern: s.pattern, Trips: s.trips, Turns: s.turns}
	switch s.status {
	case ActionPause:
		st.State = "paused"
	case ActionStop:
		st.State = "stopped"
	}
	return st, true, nil
}

// held is the refusal of a paused or stopped session's request.
func held(t *Turn, v view, status, what string, spent int64) *apierror.Error {
	how := "resume it with the link in your team chat, from the dashboard's sessions page, or with `caddy modelgate resume " +
		v.name + " --api-key-id " + t.KeyID + "`"
	if status == ActionStop {
		how = "an admin must clear it (`caddy modelgate resume " + v.name + " --api-key-id " + t.KeyID + "` with the admin key)"
	}
	others := "Other sessions of this key are not affected."
	if v.conversation {
		others = "Other conversations of this key are not affected; a new session id does not resume this one."
	}
	if v.key {
		others = "Every session of this key (or of its person) is held until then; a new session id does not resume it."
	}
	word := map[string]string{ActionPause: "paused", ActionStop: "stopped"}[status]
	return &apierror.Error{Status: http.StatusTooManyRequests, Code: "agent_session_" + word, Type: "rate_limit_error", NoRetry: true,
		Message: "Modelgate's loop breaker " + word + " this agent session: " + what + " (" + dollars(spent) + " spent so far). To go on, " + how +
			". " + others}
}

func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func tokenEqual(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

func (b *Breaker) failed(err error) {
	if b.o.Failed != nil {
		b.o.Failed(err)
	}
}

func (b *Breaker) name(id string) string {
	if b.o.Names != nil {
		if n := b.o.Names(id); n != "" && n != id {
			return n + " (" + id + ")"
		}
	}
	return id
}
