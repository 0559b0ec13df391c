// Package audit is the gateway's audit log: every admin action (keys,
// workspaces, limits, SCIM changes, sign-ins, config reloads) appended
// with who did it, to what, what changed, when and from where, into the
// ledger database's append-only audit_log table, which every instance on
// the database shares. Each row is chained to the one before it by hash
// (ledger.VerifyAudit, `caddy modelgate audit verify`), so a row altered,
// deleted or inserted in the database shows. It never holds a secret:
// callers pass the names
// and values of the fields they changed, and Record drops any field whose
// name says it is a secret.
package audit

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// Event is one admin action. Its fields are the same, in the same order,
// as the identity package's AuditEvent, so one converts to the other.
type Event struct {
	Time   time.Time
	Actor  string // a key id, or a person's email or subject
	Action string // e.g. key.create, key.update, workspace.archive, scim.user.deactivate, config.reload, oidc.signin
	Target string // the key, workspace, user or group acted on
	Source string // the client's address
	// Fields are what changed or matters, by name (never a secret).
	Fields map[string]string
}

// Recorder takes events; *Log implements it, and so does Discard.
type Recorder interface {
	Record(ctx context.Context, e Event)
}

// Discard drops every event: for handlers built without an audit log.
var Discard Recorder = discard{}

type discard struct{}

func (discard) Record(context.Context, Event) {}

// StoreSource yields the ledger's store once it is open (the Controls
// registry's WaitStore): the audit log lives in the same database as the
// runtime keys.
type StoreSource interface {
	WaitStore(ctx context.Context) ledger.ControlStore
}

// Log appends events to the ledger's audit table.
type Log struct {
	Source StoreSource
	Logger *slog.Logger // where a failed append is reported; nil: slog.Default
	Now    func() time.Time
}

// Record appends e. An audit write outlives the request that caused it
// (the action is already done), bounded at 5 s; a failure is logged,
// never returned, because the action it describes has happened.
func (l *Log) Record(ctx context.Context, e Event) {
	if l == nil || l.Source == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	logger := l.Logger
	if logger == nil {
		logger = slog.Default()
	}
	if e.Time.IsZero() && l.Now != nil {
		e.Time = l.Now()
	}
	store, ok := l.Source.WaitStore(ctx).(ledger.AuditStore)
	if !ok {
		logger.Warn("audit log: no ledger database to append to", "action", e.Action, "target", e.Target)
		return
	}
	if _, err := store.AppendAudit(ctx, Entry(e)); err != nil {
		logger.Error("audit log: append failed", "action", e.Action, "target", e.Target, "error", err)
	}
}

// Diff is what changed from before to after, as an Event's Fields: each
// field whose value differs, at its new value, and each field after lacks
// as "". A creation is Diff(nil, after), a deletion Diff(before, nil).
func Diff(before, after map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range after {
		if before[k] != v {
			out[k] = v
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			out[k] = ""
		}
	}
	return out
}

// Entry is e as the ledger stores it, with secret-looking fields left out.
func Entry(e Event) ledger.AuditEntry {
	fields := make(map[string]string, len(e.Fields))
	for k, v := range e.Fields {
		if Secret(k) {
			continue
		}
		fields[k] = v
	}
	return ledger.AuditEntry{Time: e.Time, Actor: e.Actor, Action: e.Action, Target: e.Target, Source: e.Source, Fields: fields}
}

// Secret reports whether a field's name says its value is a secret: such
// a field is never written, whatever a caller passes.
func Secret(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"secret", "password", "token", "value", "api_key", "apikey", "credential"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// SourceOf is the address a request came from, without its port.
func SourceOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
