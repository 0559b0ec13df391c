package handlers

import (
	"context"
	"net/http"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/secretscan"
)

// secretActions is, per alias, what the secret firewall does: the
// strictest action of every deployment its chain may send the request to
// (its own and its fallbacks'), unless the gateway's SecretsFor decides.
func (g *Gateway) buildSecretActions() {
	if g.opts.Secrets == nil {
		return
	}
	g.secretActions = make(map[string]secretscan.Action, len(g.chains))
	for alias, chain := range g.chains {
		strictest := modellist.SecretsOff
		for _, l := range chain {
			for _, d := range l.deployments {
				a := d.Entry().SecretsPolicy()
				if g.opts.SecretsFor != nil {
					a = g.opts.SecretsFor(l.alias, d.Entry())
				}
				if a.Stricter(strictest) {
					strictest = a
				}
			}
		}
		g.secretActions[alias] = secretscan.Action(strictest)
	}
}

// screenSecrets is the firewall's step on a request that has been read and
// resolved to an alias: it finds credentials in every text of the body,
// then redacts them (the body and the parsed request are replaced), refuses
// the request naming rule and place, or only reports them. With the
// firewall off for the alias it costs one map read.
func (g *Gateway) screenSecrets(ctx context.Context, c *Call, cf providers.Format, id *policy.Identity, req *clientRequest, info providers.RequestInfo) (providers.RequestInfo, error) {
	action := g.secretActions[req.alias]
	if action == secretscan.Off || action == "" {
		return info, nil
	}
	return g.screenBody(ctx, c, cf, id, req, info, action)
}

// screenBody is screenSecrets' work, apart so that the firewall off
// costs no allocation.
func (g *Gateway) screenBody(ctx context.Context, c *Call, cf providers.Format, id *policy.Identity, req *clientRequest, info providers.RequestInfo, action secretscan.Action) (providers.RequestInfo, error) {
	fw := g.opts.Secrets
	session := func() string {
		s, _ := resolveSession(c.Session, req.body, cf, info)
		s, _, _ = g.sessionStandIn(req.alias, s)
		return s
	}
	scope := &secretscan.LazyNames{Firewall: fw, Scope: func() string { return secretScope(session(), id) }}
	v, err := fw.Screen(action, req.body, scope)
	if err != nil || len(v.Detections) == 0 {
		return info, nil
	}
	g.reportSecrets(action, "request", req.alias, id, session(), v.Detections)
	if v.Blocked {
		d := v.Detections[0]
		return info, &providers.APIError{Status: http.StatusBadRequest, Code: "secret_detected", Param: d.Location.Path,
			Message: secretscan.BlockMessage(d)}
	}
	if action != secretscan.Redact {
		return info, nil
	}
	parsed, err := g.parsers[cf](ctx, c, v.Body)
	if err != nil {
		return info, err
	}
	parsed.SetAlias(req.alias)
	req.body = v.Body
	return parsed, nil
}

// screenContinuation passes a resumed stream's continuation request
// through the firewall: its prefill is the answer so far as the upstream
// wrote it, before the client's copy was redacted, and it may go to
// another deployment or a fallback. Redact rewrites it (the same
// placeholders the client saw); block refuses to continue (false: the
// client gets the stream's error event).
func (g *Gateway) screenContinuation(x *exchange, body []byte) ([]byte, bool) {
	action := g.secretActions[x.alias]
	if action == secretscan.Off || action == "" {
		return body, true
	}
	// The scope's closure takes copies: capturing x would move every
	// request's exchange to the heap.
	id, session := x.call.Identity, x.rec.SessionID
	scope := &secretscan.LazyNames{Firewall: g.opts.Secrets, Scope: func() string { return secretScope(session, id) }}
	v, err := g.opts.Secrets.Screen(action, body, scope)
	if err != nil {
		return nil, false
	}
	if len(v.Detections) > 0 {
		g.reportSecrets(action, "request", x.alias, id, session, v.Detections)
	}
	return v.Body, !v.Blocked
}

// screenSessionID keeps a credential sent as a session id out of the
// ledger, the chat and the reports: under any action but off it becomes
// the firewall's stand-in, and is reported.
func (g *Gateway) screenSessionID(alias string, id *policy.Identity, session string) string {
	out, d, action := g.sessionStandIn(alias, session)
	if d != nil {
		g.reportSecrets(action, "request", alias, id, out, []secretscan.Detection{*d})
	}
	return out
}

// sessionStandIn is the session id as the gateway keeps it, what it
// found in it, and the alias's action.
func (g *Gateway) sessionStandIn(alias, session string) (string, *secretscan.Detection, secretscan.Action) {
	action := g.secretActions[alias]
	if session == "" || action == secretscan.Off || action == "" {
		return session, nil, action
	}
	out, d := g.opts.Secrets.SessionID(session)
	return out, d, action
}

// screenBatchInput screens a batch item's body for model before the
// batch stores it (batch.Screener): what a request of the key would go
// upstream as, so that the stored copy never holds more than the
// upstream would see. Log and off store it as sent: the worker's run
// reports it then.
func (g *Gateway) screenBatchInput(id *policy.Identity, model string, body []byte) ([]byte, string) {
	alias, ok := g.models.Resolve(model)
	if !ok || g.opts.Secrets == nil {
		return body, ""
	}
	action := g.secretActions[alias]
	if action != secretscan.Redact && action != secretscan.Block {
		return body, ""
	}
	scope := &secretscan.LazyNames{Firewall: g.opts.Secrets, Scope: func() string { return secretScope("", id) }}
	v, err := g.opts.Secrets.Screen(action, body, scope)
	if err != nil || len(v.Detections) == 0 {
		return body, ""
	}
	g.reportSecrets(action, "request", alias, id, "", v.Detections)
	if v.Blocked {
		return body, secretscan.BlockMessage(v.Detections[0])
	}
	return v.Body, ""
}

// screenBatchID is the rule a batch request's custom_id matches for
// model (batch.Options.ScreenID), under the actions that keep a secret
// from being stored (redact, block): the batch is refused, so it is
// reported as a block.
func (g *Gateway) screenBatchID(id *policy.Identity, model, customID string) string {
	alias, ok := g.models.Resolve(model)
	if !ok || g.opts.Secrets == nil {
		return ""
	}
	if action := g.secretActions[alias]; action != secretscan.Redact && action != secretscan.Block {
		return ""
	}
	_, d := g.opts.Secrets.SessionID(customID)
	if d == nil {
		return ""
	}
	d.Location.Path = "custom_id"
	g.reportSecrets(secretscan.Block, "request", alias, id, "", []secretscan.Detection{*d})
	return d.Rule
}

// screenBatchAnswer is screenAnswer for a passed-through batch's answer
// (batch.Options.ScreenAnswer): the provider ran it, so the gateway sees
// it only at settlement, and stores what screenAnswer would have sent.
func (g *Gateway) screenBatchAnswer(id *policy.Identity, alias, endpoint string, answer []byte) []byte {
	cf := providers.FormatOpenAI
	switch endpoint {
	case "/v1/messages":
		cf = providers.FormatAnthropic
	case "/v1/responses":
		cf = providers.FormatResponses
	case "/v1/embeddings":
		return answer // numbers, no text
	}
	return g.screenAnswer(id, alias, &ledger.Record{}, cf, answer)
}

// secretScope is whose numbering a placeholder takes: the session's, so
// that "the same key" stays the same across its requests, else the key's.
func secretScope(session string, id *policy.Identity) string {
	if session != "" {
		return "s:" + session
	}
	if id != nil {
		return "k:" + id.KeyID
	}
	return ""
}

func (g *Gateway) reportSecrets(action secretscan.Action, direction, alias string, id *policy.Identity, session string, dets []secretscan.Detection) {
	if g.opts.SecretEvents == nil {
		return
	}
	for _, d := range dets {
		e := secretscan.Event{Rule: d.Rule, Action: action, Direction: direction, Alias: alias, SessionID: session, Location: d.Location}
		if id != nil {
			e.KeyID, e.Workspace, e.Person = id.KeyID, id.Workspace, id.PersonID()
		}
		g.opts.SecretEvents(e)
	}
}

// answerScope is the numbering an answer's placeholders take: the same
// as its request's. It takes the exchange's parts, not the exchange, so
// that the exchange stays on the stack with the firewall off.
func (g *Gateway) answerScope(id *policy.Identity, alias string, rec *ledger.Record) (secretscan.Action, *policy.Identity, secretscan.Namer) {
	action := g.secretActions[alias]
	if action == secretscan.Off || action == "" {
		return action, nil, nil
	}
	return action, id, &secretscan.LazyNames{Firewall: g.opts.Secrets, Scope: func() string { return secretScope(rec.SessionID, id) }}
}

// screenAnswer redacts the secrets a model wrote in a whole answer in
// format cf.
func (g *Gateway) screenAnswer(id *policy.Identity, alias string, rec *ledger.Record, cf providers.Format, out []byte) []byte {
	action, id, names := g.answerScope(id, alias, rec)
	if names == nil {
		return out
	}
	// A Response echoes its request (instructions, tools, metadata), which
	// the request's screen saw: scanning it again cost a Responses call
	// more than its request's scan, and reported the client's own text as
	// the model's. Its output is what the model wrote.
	member := ""
	if cf == providers.FormatResponses {
		member = "output"
	}
	out, dets := g.opts.Secrets.RedactAnswerMember(action, out, member, names)
	g.reportSecrets(action, "answer", alias, id, rec.SessionID, dets)
	return out
}

// redactStored redacts a Responses answer before it is stored, so that
// the state holds what the client was sent (its detections were reported
// as it was sent).
func (g *Gateway) redactStored(id *policy.Identity, alias string, rec *ledger.Record, output []byte) []byte {
	action, _, names := g.answerScope(id, alias, rec)
	if names == nil {
		return output
	}
	output, _ = g.opts.Secrets.RedactAnswer(action, output, names)
	return output
}

// secretStream wraps a stream's translator so that what it writes for the
// client passes the firewall's stream redactor.
func (g *Gateway) secretStream(id *policy.Identity, alias string, rec *ledger.Record, tr providers.StreamTranslator) providers.StreamTranslator {
	action, id, names := g.answerScope(id, alias, rec)
	if names == nil {
		return tr
	}
	s := &secretStream{inner: tr, sr: g.opts.Secrets.NewStream(action, names),
		report: func(dets []secretscan.Detection) {
			g.reportSecrets(action, "answer", alias, id, rec.SessionID, dets)
		}}
	if f, ok := tr.(providers.StreamFailer); ok {
		return &secretStreamFailer{secretStream: s, failer: f}
	}
	return s
}

type secretStream struct {
	inner  providers.StreamTranslator
	sr     *secretscan.StreamRedactor
	buf    []byte
	report func([]secretscan.Detection)
}

func (s *secretStream) drain() {
	if len(s.sr.Detections) > 0 {
		s.report(s.sr.Detections)
		s.sr.Detections = s.sr.Detections[:0]
	}
}

func (s *secretStream) Translate(dst []byte, ev providers.Event) ([]byte, error) {
	var err error
	s.buf, err = s.inner.Translate(s.buf[:0], ev)
	dst = s.sr.Filter(dst, s.buf)
	s.drain()
	return dst, err
}

func (s *secretStream) Finish(dst []byte) []byte {
	s.buf = s.inner.Finish(s.buf[:0])
	dst = s.sr.Finish(s.sr.Filter(dst, s.buf))
	s.drain()
	return dst
}

func (s *secretStream) Usage() providers.Usage { return s.inner.Usage() }
func (s *secretStream) Complete() bool         { return s.inner.Complete() }

// secretStreamFailer keeps a translator's own way of ending a broken
// stream (Responses' response.failed), redacted like the rest.
type secretStreamFailer struct {
	*secretStream
	failer providers.StreamFailer
}

func (s *secretStreamFailer) Fail(dst []byte, e *providers.APIError) []byte {
	s.buf = s.failer.Fail(s.buf[:0], e)
	dst = s.sr.Finish(s.sr.Filter(dst, s.buf))
	s.drain()
	return dst
}
