package secretscan

import "fmt"

// Action is what the firewall does with a secret it finds.
type Action string

// The actions, as the models file and the Caddyfile spell them.
const (
	Redact Action = "redact"
	Block  Action = "block"
	Log    Action = "log"
	Off    Action = "off"
)

// Firewall is the step of the request path: given the action that
// applies, a request body (any client format's JSON) and the scope that
// numbers placeholders (the session, else the key), it says what goes
// upstream. It holds the compiled rules and the placeholder table; one
// serves every request of a gateway.
type Firewall struct {
	rules *Rules
	names *Placeholders
}

// Default bounds of the placeholder table: sessions remembered, and
// secrets numbered per session.
const (
	DefaultSessions        = 10000
	DefaultSecretsPerScope = 1000
)

// New compiles the rule set and sizes the placeholder table.
func New(sessions, perSession int) (*Firewall, error) {
	rs, err := Compile()
	if err != nil {
		return nil, err
	}
	return &Firewall{rules: rs, names: NewPlaceholders(sessions, perSession)}, nil
}

// Rules is the compiled rule set.
func (f *Firewall) Rules() *Rules { return f.rules }

// Verdict is the firewall's decision on one body.
type Verdict struct {
	// Body is what to send: the body itself unless redacted.
	Body []byte
	// Detections are the secrets found, in body order.
	Detections []Detection
	// Blocked is set when the action is block and something was found.
	Blocked bool
}

// Screen applies action to body; names numbers the placeholders (a
// session's Names, or one worked out when first needed). Off returns the
// body untouched without reading it.
func (f *Firewall) Screen(action Action, body []byte, names Namer) (Verdict, error) {
	switch action {
	case Off, "":
		return Verdict{Body: body}, nil
	case Redact:
		out, dets, err := f.rules.RedactBody(body, names)
		return Verdict{Body: out, Detections: dets}, err
	}
	dets, err := f.rules.ScanBody(body)
	return Verdict{Body: body, Detections: dets, Blocked: action == Block && len(dets) > 0}, err
}

// Names is scope's placeholder numbering.
func (f *Firewall) Names(scope string) *Names { return f.names.For(scope) }

// LazyNames is a Namer that takes Scope's numbering from Firewall only
// when a secret is found: most bodies hold none, and working the scope
// out (a request's session) and taking its numbering both cost.
type LazyNames struct {
	Firewall *Firewall
	Scope    func() string
	names    Namer
}

// Placeholder names value in Scope's numbering.
func (l *LazyNames) Placeholder(rule, value string) string {
	if l.names == nil {
		l.names = l.Firewall.Names(l.Scope())
	}
	return l.names.Placeholder(rule, value)
}

// RedactAnswer redacts a whole answer (a non-streamed response body) in
// scope's numbering; only Redact and Block change it (an answer is already
// paid for: blocking it would only hide it, so Block redacts).
func (f *Firewall) RedactAnswer(action Action, body []byte, names Namer) ([]byte, []Detection) {
	return f.RedactAnswerMember(action, body, "", names)
}

// RedactAnswerMember is RedactAnswer for an answer whose top-level
// members other than member echo the request (a Responses object's
// instructions, tools, metadata): the request's own screen saw those, so
// only member, what the model wrote, is scanned. "" scans it all.
func (f *Firewall) RedactAnswerMember(action Action, body []byte, member string, names Namer) ([]byte, []Detection) {
	switch action {
	case Redact, Block:
		out, dets, err := f.rules.redactBody(body, names, member)
		if err != nil {
			return body, nil
		}
		return out, dets
	case Log:
		dets, _ := f.rules.scanBody(body, member)
		return body, dets
	}
	return body, nil
}

// BlockMessage is the refusal's text: rule and place, never the value.
func BlockMessage(d Detection) string {
	return fmt.Sprintf("request refused by the gateway's secret firewall: a credential (rule %s) was found at %s; remove it, or ask an admin to set this model's secrets action to redact",
		d.Rule, d.Location)
}

// Event is one detection as the gateway reports it: to the metrics, the
// access log, the ledger and (for a block) the audit log. It never holds
// the value.
type Event struct {
	Rule      string
	Action    Action
	Direction string // "request" or "answer"
	Alias     string
	KeyID     string
	Workspace string
	Person    string
	SessionID string
	Location  Location
}
