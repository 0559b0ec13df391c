package modellist

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/modelgate/modelgate/money"
)

// MCP transports, as LiteLLM names them in mcp_servers.
const (
	MCPTransportHTTP  = "http"
	MCPTransportSSE   = "sse"
	MCPTransportStdio = "stdio"
)

// MCPServer is one entry of mcp_servers: an upstream MCP server the
// gateway connects to. Headers and Env hold resolved secrets; they are
// never printed.
type MCPServer struct {
	Name            string
	URL             string
	Transport       string
	Command         string
	Args            []string
	Env             map[string]string
	Headers         map[string]string
	AllowedTools    []string
	DisallowedTools []string
	// Timeout bounds one upstream call; 0 means the gateway's default.
	Timeout time.Duration
	// RequireApproval lists the tools whose calls wait for a person's
	// approval; ["*"] is every tool, nil none.
	RequireApproval []string
	// ApprovalTimeout bounds how long such a call waits; 0 means the
	// gateway's default (2 minutes).
	ApprovalTimeout time.Duration
	// ApprovalFrom is who is asked: "client" (default: the calling
	// client's user through an elicitation when it can, else the team) or
	// "team" (never the calling client: the chat, dashboard and CLI).
	ApprovalFrom string
	// Secrets is what the secret firewall does with a credential in a
	// tool call's arguments; SecretsDefault leaves it to the gateway
	// (llm_gateway's secrets action, else redact).
	Secrets SecretsAction
	// Auth is MCPAuthShared (the headers, for every caller) or
	// MCPAuthOAuth (each person's own token; OAuth holds its client).
	Auth  string
	OAuth *MCPOAuth
	// CostPerCallPico is what one call of any of the server's tools costs,
	// in picodollars (cost_per_call); 0: calls cost nothing.
	CostPerCallPico int64
}

// NeedsApproval reports whether require_approval names tool.
func (s *MCPServer) NeedsApproval(tool string) bool {
	return slices.Contains(s.RequireApproval, "*") || slices.Contains(s.RequireApproval, tool)
}

// ToolAllowed reports whether the server's allowed_tools and
// disallowed_tools let tool through.
func (s *MCPServer) ToolAllowed(tool string) bool {
	if len(s.AllowedTools) > 0 && !slices.Contains(s.AllowedTools, tool) {
		return false
	}
	return !slices.Contains(s.DisallowedTools, tool)
}

func mcpFields() []string {
	return []string{"url", "transport", "command", "args", "env", "headers", "allowed_tools", "disallowed_tools", "timeout", "description", "require_approval", "approval_timeout", "approval_from", "auth", "authorization_server", "client_id", "client_secret", "scopes", "cost_per_call", "secrets"}
}

// mcpName is what a server name may be: it becomes the tool prefix
// (<server>-<tool>) and a path segment (/mcp/<server>).
var mcpName = regexp.MustCompile(`^[A-Za-z0-9_]+$`)

func (p *parser) mcpServers(c *Config, n *yaml.Node) {
	w := where{field: "mcp_servers"}
	n = deref(n)
	if n.Kind != yaml.MappingNode {
		p.errorf(n, w, "must be a mapping of server name to its settings, e.g. everything: {transport: stdio, command: npx, args: [...]}")
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || !mcpName.MatchString(k.Value) {
			p.errorf(k, w, "server names must be letters, digits and underscores (they prefix tool names as <server>-<tool> and form the path /mcp/<server>)")
			continue
		}
		name := k.Value
		sw := where{entry: "mcp_servers." + name}
		if line, dup := seen[name]; dup {
			p.errorf(k, sw, "given twice (first on line %d); keep one", line)
			continue
		}
		seen[name] = k.Line
		if s := p.mcpServer(name, v, sw); s != nil {
			c.MCPServers = append(c.MCPServers, s)
		}
	}
}

func (p *parser) mcpServer(name string, n *yaml.Node, w where) *MCPServer {
	fs, ok := p.mapping(n, w, mcpFields(), "url, transport, command, args, env, headers, allowed_tools, disallowed_tools, timeout, require_approval, approval_timeout, approval_from, auth, authorization_server, client_id, client_secret, scopes, cost_per_call, secrets")
	if !ok {
		return nil
	}
	before := len(p.errs)
	s := &MCPServer{Name: name}
	if f, ok := fs["transport"]; ok {
		t, _ := p.scalar(f.val, w.sub("transport"))
		switch t {
		case MCPTransportHTTP, MCPTransportSSE, MCPTransportStdio:
			s.Transport = t
		case "streamable_http", "streamable-http":
			s.Transport = MCPTransportHTTP
		case "":
		default:
			p.errorf(f.val, w.sub("transport"), "unknown transport %q; use http (Streamable HTTP), sse or stdio", t)
		}
	}
	if f, ok := fs["url"]; ok {
		if u, ok := p.optional(f.val, w.sub("url")); ok && u != "" {
			pu, err := url.Parse(u)
			if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
				p.errorf(f.val, w.sub("url"), "must be an http:// or https:// URL, e.g. https://mcp.example.com/mcp")
			} else {
				s.URL = u
			}
		}
	}
	if f, ok := fs["command"]; ok {
		s.Command, _ = p.optional(f.val, w.sub("command"))
	}
	if f, ok := fs["args"]; ok {
		s.Args = p.stringList(f.val, w.sub("args"), true)
	}
	if f, ok := fs["env"]; ok {
		s.Env = p.envMap(f.val, w.sub("env"))
	}
	if f, ok := fs["headers"]; ok {
		s.Headers = p.headers(f.val, w.sub("headers"))
	}
	if f, ok := fs["allowed_tools"]; ok {
		s.AllowedTools = p.stringList(f.val, w.sub("allowed_tools"), false)
	}
	if f, ok := fs["disallowed_tools"]; ok {
		s.DisallowedTools = p.stringList(f.val, w.sub("disallowed_tools"), false)
	}
	if f, ok := fs["timeout"]; ok {
		s.Timeout, _ = p.duration(f.val, w.sub("timeout"), false)
	}
	if f, ok := fs["require_approval"]; ok {
		s.RequireApproval = p.requireApproval(f.val, w.sub("require_approval"))
	}
	if f, ok := fs["approval_timeout"]; ok {
		s.ApprovalTimeout, _ = p.duration(f.val, w.sub("approval_timeout"), false)
	}
	if f, ok := fs["cost_per_call"]; ok {
		s.CostPerCallPico = p.costPerCall(f.val, w.sub("cost_per_call"))
	}
	if f, ok := fs["approval_from"]; ok {
		switch v, _ := p.scalar(f.val, w.sub("approval_from")); v {
		case "client", "team":
			s.ApprovalFrom = v
		default:
			p.errorf(f.val, w.sub("approval_from"), "must be client (ask the calling client's user first, when it can be asked) or team (only the chat, the dashboard and the CLI decide)")
		}
	}
	if f, ok := fs["secrets"]; ok {
		s.Secrets, _ = p.secretsAction(f.val, w.sub("secrets"))
	}
	if s.Transport == "" {
		switch {
		case s.Command != "":
			s.Transport = MCPTransportStdio
		case s.URL != "":
			s.Transport = MCPTransportHTTP
		}
	}
	switch s.Transport {
	case MCPTransportStdio:
		if s.Command == "" {
			p.errorf(n, w.sub("command"), "a stdio server needs the program to start, e.g. command: npx")
		}
		if s.URL != "" {
			p.errorf(n, w.sub("url"), "a stdio server has no url; remove it or set transport: http")
		}
		if len(s.Headers) > 0 {
			p.errorf(n, w.sub("headers"), "a stdio server takes no headers; pass secrets through env")
		}
	case MCPTransportHTTP, MCPTransportSSE:
		if s.URL == "" {
			p.errorf(n, w.sub("url"), "a %s server needs its url, e.g. url: https://mcp.example.com/mcp", s.Transport)
		}
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 {
			p.errorf(n, w.sub("command"), "command, args and env are for transport: stdio; remove them or set transport: stdio")
		}
	default:
		if len(p.errs) == before {
			p.errorf(n, w, "needs either url (transport http or sse) or command (transport stdio)")
		}
	}
	p.mcpAuth(s, fs, n, w)
	for _, t := range s.AllowedTools {
		if slices.Contains(s.DisallowedTools, t) {
			p.errorf(n, w.sub("disallowed_tools"), "tool %q is in both allowed_tools and disallowed_tools; keep it in one", t)
		}
	}
	if len(p.errs) > before {
		return nil
	}
	return s
}

// requireApproval reads require_approval: true (every tool), false, or a
// list of tool names.
func (p *parser) requireApproval(n *yaml.Node, w where) []string {
	n = deref(n)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		if n.Value == "true" {
			return []string{"*"}
		}
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, w, "must be true (every tool of the server), false, or a list of tool names, e.g. [deploy, drop_table]")
		return nil
	}
	return p.stringList(n, w, false)
}

// stringList reads a list of scalars; withEnv resolves os.environ/NAME.
func (p *parser) stringList(n *yaml.Node, w where, withEnv bool) []string {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.SequenceNode {
		p.errorf(n, w, "must be a list, e.g. [a, b]")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, e := range n.Content {
		s, ok := p.scalar(e, w.idx(i))
		if !ok {
			continue
		}
		if withEnv {
			if s, ok = p.env(s, deref(e), w.idx(i)); !ok {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

// envMap reads a mapping of environment variable to value, resolving
// os.environ/NAME values; the values are never echoed.
func (p *parser) envMap(n *yaml.Node, w where) map[string]string {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		p.errorf(n, w, "must be a mapping of variable name to value, e.g. GITHUB_TOKEN: os.environ/GITHUB_TOKEN")
		return nil
	}
	out := make(map[string]string, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || k.Value == "" || strings.ContainsAny(k.Value, "=\x00") {
			p.errorf(k, w, "variable names must be plain names without = or NUL")
			continue
		}
		ew := w.sub(k.Value)
		if _, dup := out[k.Value]; dup {
			p.errorf(k, ew, "given twice; keep one")
			continue
		}
		var s string
		if !isNull(deref(v)) {
			var ok bool
			if s, ok = p.scalar(v, ew); !ok {
				continue
			}
			if s, ok = p.env(s, deref(v), ew); !ok {
				continue
			}
		}
		if strings.ContainsRune(s, 0) {
			p.errorf(v, ew, "value contains NUL; check the value or the environment variable it comes from")
			continue
		}
		out[k.Value] = s
	}
	return out
}

// MCPServer returns the mcp_servers entry called name.
func (c *Config) MCPServer(name string) (*MCPServer, bool) {
	for _, s := range c.MCPServers {
		if s.Name == name {
			return s, true
		}
	}
	return nil, false
}

// costPerCall reads a price per tool call in US dollars ("0.01", at most
// six decimals and $1,000) as picodollars.
func (p *parser) costPerCall(n *yaml.Node, w where) int64 {
	v, ok := p.scalar(n, w)
	if !ok {
		return 0
	}
	// A price per million tokens in dollars is picodollars per token:
	// the same digits as a price per call in micro-dollars.
	micro, err := money.ParsePerMillion(v, money.DollarsPerMillion)
	if err != nil {
		p.errorf(n, w, "%q is not a price in US dollars per call, e.g. 0.01 (at most six decimals, at most $1000)", v)
		return 0
	}
	return micro * 1_000_000
}
