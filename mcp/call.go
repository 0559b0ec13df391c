package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/modelgate/modelgate/mcp/approval"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/telemetry"
)

// callHandler forwards a tools/call to tool on u, checking the caller's
// allow-list on every call (it may have changed since the session began),
// and records it.
func (g *Gateway) callHandler(u *upstream, tool string) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		var id *policy.Identity
		if req.Extra != nil && req.Extra.TokenInfo != nil {
			id, _ = req.Extra.TokenInfo.Extra["identity"].(*policy.Identity)
		}
		c := Call{Server: u.cfg.Name, Tool: tool, Outcome: OutcomeOK}
		if req.Session != nil {
			c.Session = req.Session.ID()
		}
		if id != nil {
			c.KeyID, c.Workspace = id.KeyID, id.Workspace
			c.Person, c.Groups = id.PersonID(), id.Groups
		}
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		c.Bytes = int64(len(args))
		// A span under the request's when Caddy's tracing is on; nil and
		// free otherwise.
		ctx, span := telemetry.StartToolCall(ctx, u.cfg.Name, tool)
		res, err := g.call(ctx, u, tool, id, args, req.Params, req.Session, &c)
		c.Duration = time.Since(start)
		if res != nil {
			if b, merr := json.Marshal(res); merr == nil {
				c.Bytes += int64(len(b))
			}
			if res.IsError && c.Outcome == OutcomeOK {
				c.Outcome = OutcomeToolError
			}
		}
		if c.Outcome == OutcomeOK {
			span.End("")
		} else {
			span.End(string(c.Outcome))
		}
		g.obs.ToolCall(ctx, c)
		return res, err
	}
}

func (g *Gateway) call(ctx context.Context, u *upstream, tool string, id *policy.Identity, args json.RawMessage, in *sdk.CallToolParamsRaw, ss *sdk.ServerSession, c *Call) (*sdk.CallToolResult, error) {
	if id == nil || !toolAllowed(g.allowList(id), u.cfg.Name, tool) {
		c.Outcome = OutcomeDenied
		return nil, rpcError(jsonrpc.CodeInvalidParams, "tool %q of MCP server %q is not allowed for this key", tool, u.cfg.Name)
	}
	if g.opts.Admit != nil {
		if err := g.opts.Admit(ctx, id); err != nil {
			c.Outcome = OutcomeLimited
			return nil, rpcError(codeLimited, "tool %q of MCP server %q: %v", tool, u.cfg.Name, err)
		}
	}
	args, err := g.screenArgs(u, tool, id, args, c)
	if err != nil {
		return nil, err
	}
	var meta sdk.Meta
	if in != nil {
		if meta, err = screenMeta(g, u, fmt.Sprintf("tool %q", tool), tool, id, in.Meta); err != nil {
			c.Outcome = OutcomeDenied
			return nil, err
		}
	}
	if version, needed := g.approvalRule(id, u, tool); needed {
		canon, err := approval.Canonical(args)
		if err != nil {
			c.Outcome = OutcomeDenied
			return nil, argsRefusal(tool, u.cfg.Name, err)
		}
		var progress any
		if in != nil {
			progress = in.GetProgressToken()
		}
		shown := g.opts.Secrets.Shown(id, canon)
		if err := g.awaitApproval(ctx, u, tool, id, canon, shown, version, ss, progress, c); err != nil {
			return nil, err
		}
		// The server is sent exactly what was approved.
		args = canon
	}
	cs, _, err := u.current()
	if err == nil && u.personal() {
		if cs, err = g.personalSession(ctx, u, id); err != nil {
			c.Outcome = OutcomeUnavailable
			return nil, personalError(fmt.Sprintf("tool %q", tool), u.cfg.Name, err)
		}
		if res := connectAnswer(u, tool); res != nil {
			return res, nil
		}
	}
	if err != nil {
		c.Outcome = OutcomeUnavailable
		return nil, rpcError(jsonrpc.CodeInternalError, "tool %q: MCP server %q %v; try again later", tool, u.cfg.Name, err)
	}
	hold, err := g.reserve(ctx, u, tool, id, c)
	if err != nil {
		return nil, err
	}
	defer c.Spend.settle(hold, u.cfg.CostPerCallPico)
	timeout := g.timeout(u)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &sdk.CallToolParams{Name: tool}
	if len(args) > 0 {
		params.Arguments = args
	}
	params.Meta = meta
	defer g.relayProgress(params, ss)()
	res, err := cs.CallTool(cctx, params)
	if err != nil {
		if errors.Is(cctx.Err(), context.DeadlineExceeded) {
			c.Outcome = OutcomeTimeout
			return nil, rpcError(jsonrpc.CodeInternalError, "MCP server %q did not answer tool %q within %s", u.cfg.Name, tool, timeout)
		}
		c.Outcome = OutcomeError
		return nil, upstreamError(fmt.Sprintf("MCP server %q, tool %q", u.cfg.Name, tool), err)
	}
	return res, nil
}
