package mcp

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/policy"
)

// Resources, prompts and completions are forwarded by a receiving
// middleware rather than registered on the SDK server like tools: they are
// read on demand from the upstream session, so nothing has to be re-synced
// when a server's resources change, and templates, cursors and errors pass
// through as the server gave them.
//
// On /mcp/<server> every name, URI and cursor is the server's own. On the
// aggregate /mcp, prompt names are prefixed "<server>-" like tool names, and
// so are resource URIs and URI templates ("everything-demo://resource/1");
// the gateway strips the prefix before asking the server. Server names are
// [A-Za-z0-9_]+, so the first "-" ends the prefix. The aggregate lists are
// every allowed server's full list in one page (no cursor).
//
// Resources, prompts and completions need the whole server in the caller's
// allow-list (entry "server", or no list): a "server/tool" entry grants that
// tool only.

// featureMethods are the methods the middleware forwards.
var featureMethods = map[string]bool{
	"resources/list": true, "resources/read": true, "resources/templates/list": true,
	"prompts/list": true, "prompts/get": true, "completion/complete": true,
}

func identityOf(req sdk.Request) *policy.Identity {
	ex := req.GetExtra()
	if ex == nil || ex.TokenInfo == nil {
		return nil
	}
	id, _ := ex.TokenInfo.Extra["identity"].(*policy.Identity)
	return id
}

// forward is the middleware of view v.
func (g *Gateway) forward(v *view) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if !g.settled.Load() {
				g.awaitFirst(ctx, g.waitsFor(v, method, req))
			}
			if method == "tools/list" {
				g.listPersonal(ctx, v, identityOf(req))
			}
			if v.search && method == "tools/list" {
				return &sdk.ListToolsResult{Tools: searchTools()}, nil
			}
			if r, ok := req.(*sdk.CallToolRequest); ok && method == "tools/call" {
				if err := g.checkListed(ctx, v, r); err != nil {
					return nil, err
				}
			}
			if !featureMethods[method] {
				return next(ctx, method, req)
			}
			id := identityOf(req)
			if id == nil {
				return nil, rpcError(jsonrpc.CodeInvalidRequest, "%s: no caller identity", method)
			}
			allow := g.allowList(id)
			switch r := req.(type) {
			case *sdk.ListResourcesRequest:
				return g.listResources(ctx, v, allow, id, r.Params)
			case *sdk.ListResourceTemplatesRequest:
				return g.listTemplates(ctx, v, allow, id, r.Params)
			case *sdk.ListPromptsRequest:
				return g.listPrompts(ctx, v, allow, id, r.Params)
			case *sdk.ReadResourceRequest:
				u, uri, err := g.route(v, allow, r.Params.URI, "resource")
				if err != nil {
					return nil, err
				}
				if err := g.screenName(u, "resources/read", "the resource URI", "resource", id, uri); err != nil {
					return nil, err
				}
				meta, err := screenMeta(g, u, "resources/read", "resource", id, r.Params.Meta)
				if err != nil {
					return nil, err
				}
				cs, err := g.featureSession(ctx, u, id)
				if err != nil {
					return nil, err
				}
				p := *r.Params
				p.URI, p.Meta = uri, meta
				defer g.relayProgress(&p, r.Session)()
				cctx, cancel := context.WithTimeout(ctx, g.timeout(u))
				defer cancel()
				res, err := cs.ReadResource(cctx, &p)
				if err != nil {
					return nil, u.wrap(cctx, "resources/read", err)
				}
				if v.single == "" {
					for _, c := range res.Contents {
						if c != nil && c.URI != "" {
							c.URI = u.cfg.Name + "-" + c.URI
						}
					}
				}
				return res, nil
			case *sdk.GetPromptRequest:
				u, name, err := g.route(v, allow, r.Params.Name, "prompt")
				if err != nil {
					return nil, err
				}
				if err := g.screenName(u, "prompts/get", "the prompt name", "prompt", id, name); err != nil {
					return nil, err
				}
				cs, err := g.featureSession(ctx, u, id)
				if err != nil {
					return nil, err
				}
				p := *r.Params
				if err := screenParams(g, u, fmt.Sprintf("prompt %q", name), "prompt:"+name, id, &p.Arguments); err != nil {
					return nil, err
				}
				if p.Meta, err = screenMeta(g, u, fmt.Sprintf("prompt %q", name), "prompt:"+name, id, p.Meta); err != nil {
					return nil, err
				}
				p.Name = name
				defer g.relayProgress(&p, r.Session)()
				cctx, cancel := context.WithTimeout(ctx, g.timeout(u))
				defer cancel()
				res, err := cs.GetPrompt(cctx, &p)
				if err != nil {
					return nil, u.wrap(cctx, "prompts/get", err)
				}
				return res, nil
			case *sdk.CompleteRequest:
				if r.Params == nil || r.Params.Ref == nil {
					return nil, rpcError(jsonrpc.CodeInvalidParams, "completion/complete needs params.ref")
				}
				ref := *r.Params.Ref
				target, kind := ref.Name, "prompt"
				if ref.Type == "ref/resource" {
					target, kind = ref.URI, "resource"
				}
				u, rest, err := g.route(v, allow, target, kind)
				if err != nil {
					return nil, err
				}
				if err := g.screenName(u, "completion/complete", "the "+kind+" it completes for", "completion", id, rest); err != nil {
					return nil, err
				}
				cs, err := g.featureSession(ctx, u, id)
				if err != nil {
					return nil, err
				}
				if kind == "resource" {
					ref.URI = rest
				} else {
					ref.Name = rest
				}
				p := *r.Params
				p.Ref = &ref
				vals := struct {
					Argument sdk.CompleteParamsArgument `json:"argument"`
					Context  *sdk.CompleteContext       `json:"context,omitempty"`
				}{p.Argument, p.Context}
				if err := screenParams(g, u, fmt.Sprintf("completion of %s %q", kind, rest), "completion:"+rest, id, &vals); err != nil {
					return nil, err
				}
				p.Argument, p.Context = vals.Argument, vals.Context
				if p.Meta, err = screenMeta(g, u, fmt.Sprintf("completion of %s %q", kind, rest), "completion:"+rest, id, p.Meta); err != nil {
					return nil, err
				}
				cctx, cancel := context.WithTimeout(ctx, g.timeout(u))
				defer cancel()
				res, err := cs.Complete(cctx, &p)
				if err != nil {
					return nil, u.wrap(cctx, "completion/complete", err)
				}
				return res, nil
			}
			return next(ctx, method, req)
		}
	}
}

// checkListed refuses, and records, a tools/call for a tool v does not
// serve: the SDK would refuse it too, but without a ledger record, so
// attempts outside an allow-list would go unseen.
func (g *Gateway) checkListed(ctx context.Context, v *view, r *sdk.CallToolRequest) error {
	if r.Params == nil {
		return nil
	}
	name := r.Params.Name
	if v.search && (name == searchToolName || name == callToolName) {
		return nil
	}
	g.mu.Lock()
	_, listed := v.have[name]
	g.mu.Unlock()
	if listed {
		return nil
	}
	id := identityOf(r)
	// A name no server has goes to the ledger as unknownTool, so made-up
	// names cannot grow the roll-ups and reports a row each; the name
	// itself goes only to the debug log, bounded (Call.Requested).
	c := Call{Server: unknownTool, Tool: unknownTool, Requested: bounded(name), Outcome: OutcomeDenied, Bytes: int64(len(r.Params.Arguments))}
	server, tool := v.single, name
	if server == "" {
		server, tool, _ = strings.Cut(name, "-")
	}
	err := rpcError(jsonrpc.CodeInvalidParams, "unknown tool %q: no MCP server offers it here", bounded(name))
	if u := g.byName[server]; u != nil && tool != "" {
		c.Server = server
		_, tools, downErr := u.current()
		if u.knows(tool) {
			c.Tool, c.Requested = tool, ""
		}
		switch {
		case downErr != nil:
			c.Outcome = OutcomeUnavailable
			err = rpcError(jsonrpc.CodeInternalError, "tool %q: MCP server %q %v; try again later", bounded(name), server, downErr)
		case slices.ContainsFunc(tools, func(t *sdk.Tool) bool { return t.Name == tool }):
			err = rpcError(jsonrpc.CodeInvalidParams, "tool %q: tool %q of MCP server %q is not allowed for this key", name, tool, server)
		default:
			err = rpcError(jsonrpc.CodeInvalidParams, "unknown tool %q: MCP server %q has no tool %q", bounded(name), server, bounded(tool))
		}
	}
	if id != nil {
		c.KeyID, c.Workspace = id.KeyID, id.Workspace
	}
	if r.Session != nil {
		c.Session = r.Session.ID()
	}
	g.obs.ToolCall(ctx, c)
	return err
}

// unknownTool is what the ledger records for a tool (or server) name no
// configured server has.
const unknownTool = "(unknown)"

// bounded is a client-chosen name cut to 128 bytes on a rune boundary,
// for messages and the debug log.
func bounded(name string) string {
	const limit = 128
	if len(name) <= limit {
		return name
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return name[:cut] + "…"
}

// featureUpstreams are the servers whose resources and prompts v shows to
// a caller with allow.
func (g *Gateway) featureUpstreams(v *view, allow []string) []*upstream {
	var out []*upstream
	for _, u := range g.ups {
		if v.single != "" && u.cfg.Name != v.single {
			continue
		}
		if allow != nil && !containsString(allow, u.cfg.Name) {
			continue
		}
		out = append(out, u)
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// route finds the upstream of an aggregate name or URI and strips its
// prefix; on /mcp/<server> it is the server itself, unchanged.
func (g *Gateway) route(v *view, allow []string, target, kind string) (*upstream, string, error) {
	server, rest := v.single, target
	if server == "" {
		var ok bool
		server, rest, ok = strings.Cut(target, "-")
		if !ok {
			return nil, "", rpcError(jsonrpc.CodeInvalidParams, "%s %q names no MCP server: on /mcp it must start with \"<server>-\"", kind, target)
		}
	}
	u := g.byName[server]
	if u == nil {
		return nil, "", rpcError(jsonrpc.CodeInvalidParams, "%s %q: no MCP server %q is configured", kind, target, server)
	}
	if allow != nil && !containsString(allow, server) {
		return nil, "", rpcError(jsonrpc.CodeInvalidParams, "%s %q: this key may not use the %ss of MCP server %q (its allow-list names only some of its tools)", kind, target, kind, server)
	}
	return u, rest, nil
}

// featureSession is the live session (for an auth: oauth server, the
// caller's own), or the error a caller gets at once.
func (g *Gateway) featureSession(ctx context.Context, u *upstream, id *policy.Identity) (*sdk.ClientSession, error) {
	cs, _, err := u.current()
	if err == nil && u.personal() {
		if cs, err = g.personalSession(ctx, u, id); err != nil {
			return nil, personalError("its resources and prompts", u.cfg.Name, err)
		}
	}
	if err != nil {
		return nil, rpcError(jsonrpc.CodeInternalError, "MCP server %q %v; try again later", u.cfg.Name, err)
	}
	return cs, nil
}

func (g *Gateway) timeout(u *upstream) time.Duration {
	if u.cfg.Timeout > 0 {
		return u.cfg.Timeout
	}
	return g.opts.Timeout
}

// wrap names the server in an upstream error, and says so when it was the
// gateway's deadline that ended the request.
func (u *upstream) wrap(ctx context.Context, method string, err error) error {
	if ctx.Err() == context.DeadlineExceeded {
		return rpcError(jsonrpc.CodeInternalError, "MCP server %q did not answer %s in time", u.cfg.Name, method)
	}
	if _, ok := err.(*jsonrpc.Error); ok {
		// A JSON-RPC error from the server passes as the server gave it.
		return err
	}
	return upstreamError(fmt.Sprintf("MCP server %q, %s", u.cfg.Name, method), err)
}

// listAcross lists one kind of item (method) of every server v shows
// that declared it (has). A one-server view answers that server's page as
// it is (single); the aggregate walks every page of each server (each)
// and adds its items prefixed (add).
func listAcross[T any](ctx context.Context, g *Gateway, v *view, allow []string, id *policy.Identity, method string, has func(*sdk.ServerCapabilities) bool,
	single func(context.Context, *sdk.ClientSession) error, each func(context.Context, *sdk.ClientSession) iter.Seq2[*T, error], add func(server string, t *T)) error {
	for _, u := range g.featureUpstreams(v, allow) {
		cs, caps, err := g.featureCaps(ctx, u, id)
		if err != nil || !has(caps) {
			if v.single != "" && err != nil {
				return err
			}
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, g.timeout(u))
		if v.single != "" {
			err := single(cctx, cs)
			cancel()
			if err != nil {
				return u.wrap(cctx, method, err)
			}
			return nil
		}
		for t, err := range each(cctx, cs) {
			if err != nil {
				cancel()
				return u.wrap(cctx, method, err)
			}
			add(u.cfg.Name, t)
		}
		cancel()
	}
	return nil
}

func (g *Gateway) listResources(ctx context.Context, v *view, allow []string, id *policy.Identity, p *sdk.ListResourcesParams) (*sdk.ListResourcesResult, error) {
	out := &sdk.ListResourcesResult{Resources: []*sdk.Resource{}}
	err := listAcross(ctx, g, v, allow, id, "resources/list", func(c *sdk.ServerCapabilities) bool { return c.Resources != nil },
		func(ctx context.Context, cs *sdk.ClientSession) (err error) {
			out, err = cs.ListResources(ctx, p)
			return err
		},
		func(ctx context.Context, cs *sdk.ClientSession) iter.Seq2[*sdk.Resource, error] {
			return cs.Resources(ctx, nil)
		},
		func(server string, r *sdk.Resource) {
			nr := *r
			nr.URI = server + "-" + r.URI
			out.Resources = append(out.Resources, &nr)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (g *Gateway) listTemplates(ctx context.Context, v *view, allow []string, id *policy.Identity, p *sdk.ListResourceTemplatesParams) (*sdk.ListResourceTemplatesResult, error) {
	out := &sdk.ListResourceTemplatesResult{ResourceTemplates: []*sdk.ResourceTemplate{}}
	err := listAcross(ctx, g, v, allow, id, "resources/templates/list", func(c *sdk.ServerCapabilities) bool { return c.Resources != nil },
		func(ctx context.Context, cs *sdk.ClientSession) (err error) {
			out, err = cs.ListResourceTemplates(ctx, p)
			return err
		},
		func(ctx context.Context, cs *sdk.ClientSession) iter.Seq2[*sdk.ResourceTemplate, error] {
			return cs.ResourceTemplates(ctx, nil)
		},
		func(server string, t *sdk.ResourceTemplate) {
			nt := *t
			nt.URITemplate = server + "-" + t.URITemplate
			out.ResourceTemplates = append(out.ResourceTemplates, &nt)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (g *Gateway) listPrompts(ctx context.Context, v *view, allow []string, id *policy.Identity, p *sdk.ListPromptsParams) (*sdk.ListPromptsResult, error) {
	out := &sdk.ListPromptsResult{Prompts: []*sdk.Prompt{}}
	err := listAcross(ctx, g, v, allow, id, "prompts/list", func(c *sdk.ServerCapabilities) bool { return c.Prompts != nil },
		func(ctx context.Context, cs *sdk.ClientSession) (err error) {
			out, err = cs.ListPrompts(ctx, p)
			return err
		},
		func(ctx context.Context, cs *sdk.ClientSession) iter.Seq2[*sdk.Prompt, error] {
			return cs.Prompts(ctx, nil)
		},
		func(server string, pr *sdk.Prompt) {
			np := *pr
			np.Name = server + "-" + pr.Name
			out.Prompts = append(out.Prompts, &np)
		})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// featureCaps is the live session and the capabilities the server
// declared.
func (g *Gateway) featureCaps(ctx context.Context, u *upstream, id *policy.Identity) (*sdk.ClientSession, *sdk.ServerCapabilities, error) {
	cs, err := g.featureSession(ctx, u, id)
	if err != nil {
		return nil, nil, err
	}
	caps := cs.InitializeResult().Capabilities
	if caps == nil {
		caps = &sdk.ServerCapabilities{}
	}
	return cs, caps, nil
}
