// Package agenthook turns a coding agent's hook event (Claude Code's Stop and
// Notification events, JSON on stdin) into a one-line team chat message,
// posts it to an incoming webhook, reports the session's work context
// (repository, branch, head) to the gateway on the events that start a
// session or a prompt, and registers itself in an agent's settings file. It is plain Go; caddymodule wires it to the `caddy
// agent-hook` subcommand.
package agenthook

import (
	"encoding/json"
	"io"
	"strings"

	"github.com/modelgate/modelgate/webhook"
)

// Event names the hook understands.
const (
	EventStop         = "Stop"
	EventNotification = "Notification"
)

// DefaultAgent is the agent name used when none is given.
const DefaultAgent = "Claude Code"

// unknown stands in for a field the event did not carry.
const unknown = "unknown"

// maxEventBytes bounds how much of stdin is read. Stop events may carry the
// whole final reply; anything beyond this is not worth holding the agent for.
const maxEventBytes = 8 << 20

// Event is the part of an agent's hook input the messages use. Every field is
// optional: older Claude Code versions omitted cwd on Stop, and the hook must
// still say something useful.
type Event struct {
	HookEventName    string `json:"hook_event_name"`
	SessionID        string `json:"session_id"`
	CWD              string `json:"cwd"`
	Message          string `json:"message"`
	Title            string `json:"title"`
	NotificationType string `json:"notification_type"`
	StopHookActive   bool   `json:"stop_hook_active"`
}

// ParseEvent decodes the first JSON value in data. Input that is empty, not
// JSON, or not an object yields the zero Event and an error; callers treat
// that as "no details" rather than a failure.
func ParseEvent(data []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(data, &ev); err != nil {
		return Event{}, err
	}
	return ev, nil
}

// readLimited reads at most maxEventBytes from r.
func readLimited(r io.Reader) ([]byte, error) {
	return io.ReadAll(io.LimitReader(r, maxEventBytes))
}

// BuildMessage returns the chat text for ev. event, when non-empty, overrides
// ev.HookEventName (the --event flag). ok is false for events the hook has no
// message for, in which case nothing should be posted.
func BuildMessage(ev Event, agent, event string) (text string, ok bool) {
	if event == "" {
		event = ev.HookEventName
	}
	if strings.TrimSpace(agent) == "" {
		agent = DefaultAgent
	}
	agent = webhook.Clean(agent, maxNameRunes)
	project := inlineCode(webhook.Clean(projectName(ev.CWD), maxNameRunes))
	session := inlineCode(webhook.Clean(orUnknown(ev.SessionID), maxNameRunes))

	switch {
	case strings.EqualFold(event, EventStop):
		return "✅ " + agent + " done — project: " + project + " (session: " + session + ")", true
	case strings.EqualFold(event, EventNotification):
		text = "⚠️ " + agent + " needs your attention — project: " + project + " (session: " + session + ")"
		if msg := webhook.Clean(ev.Message, maxMessageRunes); msg != "" {
			text += ": " + msg
		}
		return text, true
	}
	return "", false
}

// Bounds on inserted values, in runes: a chat line stays readable, and an
// event cannot turn the hook into a way to post pages of text.
const (
	maxNameRunes    = 120
	maxMessageRunes = 500
)

// projectName is the last path segment of cwd. Both separators are accepted
// because a Windows agent sends backslash paths regardless of where the hook
// binary was built.
func projectName(cwd string) string {
	cwd = strings.TrimRight(strings.TrimSpace(cwd), `/\`)
	if i := strings.LastIndexAny(cwd, `/\`); i >= 0 {
		cwd = cwd[i+1:]
	}
	if cwd == "" || cwd == "." || strings.HasSuffix(cwd, ":") { // "C:\" has no project name
		return unknown
	}
	return cwd
}

func orUnknown(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return unknown
	}
	return s
}

// inlineCode wraps v, a webhook.Clean value, in a Slack code span. A
// backtick inside would end the span early, so it is replaced by a
// look-alike quote.
func inlineCode(v string) string {
	return "`" + strings.ReplaceAll(v, "`", "'") + "`"
}
