package mcp

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/secretscan"
)

// ArgScreen is the secret firewall's step on tool calls: an MCP server is
// an upstream like a model's (usually someone else's service), and agents
// put file contents and shell output in tool arguments, so the arguments
// pass the same screen as a request body before the server or an
// approval sees them (docs/secret-firewall.md, "MCP tool calls").
type ArgScreen struct {
	Firewall *secretscan.Firewall
	// Action is the firewall's action for server's calls; nil is redact.
	Action func(server *modellist.MCPServer) secretscan.Action
	// Report is told of each detection, never its value; nil drops them.
	Report func(secretscan.Event)
}

// ArgVerdict is what the screen decided for one call's arguments.
type ArgVerdict struct {
	// Args are what the server may be sent: redacted under redact, the
	// arguments themselves otherwise.
	Args json.RawMessage
	// Blocked is the detection that refuses the call under block.
	Blocked *secretscan.Detection
}

// Screen applies server's action to a call of tool with arguments args
// by the key id; the placeholders are numbered in the key's scope, as a
// request without a session is.
func (s *ArgScreen) Screen(server *modellist.MCPServer, tool string, id *policy.Identity, args json.RawMessage) (ArgVerdict, error) {
	if s == nil || s.Firewall == nil || len(args) == 0 {
		return ArgVerdict{Args: args}, nil
	}
	action := secretscan.Redact
	if s.Action != nil {
		action = s.Action(server)
	}
	if action == secretscan.Off || action == "" {
		return ArgVerdict{Args: args}, nil
	}
	v, err := s.Firewall.ScreenData(action, args, s.names(id))
	if err != nil {
		return ArgVerdict{}, err
	}
	s.report(action, server.Name, tool, id, v.Detections)
	out := ArgVerdict{Args: args}
	if v.Blocked {
		out.Blocked = &v.Detections[0]
	}
	if action == secretscan.Redact {
		out.Args = v.Body
	}
	return out, nil
}

// Shown is args as a person may read them (an approval's chat line, page
// and stored row): redacted whatever the server's action, since the
// people who decide are not the ones the caller chose to show a secret.
func (s *ArgScreen) Shown(id *policy.Identity, args []byte) []byte {
	if s == nil || s.Firewall == nil || len(args) == 0 {
		return args
	}
	v, err := s.Firewall.ScreenData(secretscan.Redact, args, s.names(id))
	if err != nil {
		return args
	}
	return v.Body
}

// names numbers placeholders in the key's scope, as a request without a
// session is.
func (s *ArgScreen) names(id *policy.Identity) secretscan.Namer {
	scope := ""
	if id != nil {
		scope = "k:" + id.KeyID
	}
	return &secretscan.LazyNames{Firewall: s.Firewall, Scope: func() string { return scope }}
}

// ArgsAlias is how a detection in a tool call's arguments names where it
// was bound, in the place a model request puts its alias.
func ArgsAlias(server, tool string) string { return "mcp:" + server + "/" + tool }

func (s *ArgScreen) report(action secretscan.Action, server, tool string, id *policy.Identity, dets []secretscan.Detection) {
	if s.Report == nil {
		return
	}
	for _, d := range dets {
		e := secretscan.Event{Rule: d.Rule, Action: action, Direction: "request", Alias: ArgsAlias(server, tool), Location: d.Location}
		if id != nil {
			e.KeyID, e.Workspace, e.Person = id.KeyID, id.Workspace, id.PersonID()
		}
		s.Report(e)
	}
}

// screenArgs is the call's firewall step: the arguments to go on with, or
// the JSON-RPC error that refuses the call (rule and place, never the
// value).
func (g *Gateway) screenArgs(u *upstream, tool string, id *policy.Identity, args json.RawMessage, c *Call) (json.RawMessage, error) {
	out, err := g.screenFor(u, fmt.Sprintf("tool %q", tool), tool, id, args)
	if err != nil {
		c.Outcome = OutcomeDenied
	}
	return out, err
}

// screenFor screens what a request of u sends the server (what names the
// request in a refusal; name in a detection's alias).
func (g *Gateway) screenFor(u *upstream, what, name string, id *policy.Identity, args json.RawMessage) (json.RawMessage, error) {
	v, err := g.opts.Secrets.Screen(u.cfg, name, id, args)
	if err != nil {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "%s of MCP server %q: its arguments are not a JSON value the gateway can check (%v)", what, u.cfg.Name, err)
	}
	if d := v.Blocked; d != nil {
		return nil, rpcError(jsonrpc.CodeInvalidParams, "%s", blockMessage(what, u.cfg.Name, *d))
	}
	return v.Args, nil
}

// screenParams passes a prompts/get's arguments or a completion/complete's
// values (*p, in place) through the firewall step of tool calls: they are
// sent to the same server, and a client fills them from what the agent
// has at hand as it fills a tool's.
func screenParams[T any](g *Gateway, u *upstream, what, name string, id *policy.Identity, p *T) error {
	if g.opts.Secrets == nil || g.opts.Secrets.Firewall == nil {
		return nil
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return rpcError(jsonrpc.CodeInvalidParams, "%s of MCP server %q: %v", what, u.cfg.Name, err)
	}
	if string(raw) == "null" {
		return nil // a prompt asked for without arguments
	}
	out, err := g.screenFor(u, what, name, id, raw)
	if err != nil {
		return err
	}
	var screened T
	if err := json.Unmarshal(out, &screened); err != nil {
		return rpcError(jsonrpc.CodeInvalidParams, "%s of MCP server %q: %v", what, u.cfg.Name, err)
	}
	*p = screened
	return nil
}

// blockMessage is a blocked request's refusal: rule and place, never the
// value.
func blockMessage(what, server string, d secretscan.Detection) string {
	return fmt.Sprintf("%s of MCP server %q: call refused by the gateway's secret firewall: a credential (rule %s) was found in the arguments at %s; remove it, or ask an admin to set this MCP server's secrets action to redact",
		what, server, d.Rule, d.Location)
}

// Found is the first credential in value, a name or URI a request routes
// by. No placeholder can stand in for one (the server would read another
// name or URI), so under redact as under block it refuses the request;
// under log it is reported and passes.
func (s *ArgScreen) Found(server *modellist.MCPServer, alias string, id *policy.Identity, value string) (*secretscan.Detection, error) {
	if s == nil || s.Firewall == nil || value == "" {
		return nil, nil
	}
	action := secretscan.Redact
	if s.Action != nil {
		action = s.Action(server)
	}
	if action == secretscan.Off || action == "" {
		return nil, nil
	}
	raw, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	v, err := s.Firewall.ScreenData(secretscan.Block, raw, s.names(id))
	if err != nil || len(v.Detections) == 0 {
		return nil, err
	}
	if action == secretscan.Log {
		s.report(action, server.Name, alias, id, v.Detections)
		return nil, nil
	}
	s.report(secretscan.Block, server.Name, alias, id, v.Detections[:1])
	return &v.Detections[0], nil
}

// screenName refuses a request of u whose name or URI (where, as a
// person reads it: "the resource URI") holds a credential: the rule,
// never the value.
func (g *Gateway) screenName(u *upstream, request, where, alias string, id *policy.Identity, value string) error {
	d, err := g.opts.Secrets.Found(u.cfg, alias, id, value)
	if err != nil {
		return rpcError(jsonrpc.CodeInvalidParams, "%s of MCP server %q: the gateway could not check %s (%v)", request, u.cfg.Name, where, err)
	}
	if d != nil {
		return rpcError(jsonrpc.CodeInvalidParams, "%s of MCP server %q: refused by the gateway's secret firewall: a credential (rule %s) was found in %s, which cannot be redacted (the server would read another one); remove it",
			request, u.cfg.Name, d.Rule, where)
	}
	return nil
}

// screenMeta is a request's _meta as the server may be sent it, through
// the firewall step of its arguments (what and name as screenParams):
// clients put what they like there, and the server reads it.
func screenMeta(g *Gateway, u *upstream, what, name string, id *policy.Identity, meta sdk.Meta) (sdk.Meta, error) {
	if len(meta) == 0 {
		return nil, nil
	}
	// Wrapped, so that a detection's location says "_meta".
	wrapped := struct {
		Meta sdk.Meta `json:"_meta"`
	}{maps.Clone(meta)}
	if err := screenParams(g, u, what, name, id, &wrapped); err != nil {
		return nil, err
	}
	return wrapped.Meta, nil
}
