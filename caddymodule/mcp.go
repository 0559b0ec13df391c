package caddymodule

import (
	"context"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/mcp"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// mcpAdmit counts each MCP tool call against the key's and its
// workspace's rpm, the same windows model requests take from, so an agent
// cannot spend its rate twice. The call holds no parallel slot past its
// admission: max_parallel bounds model requests, whose cost it caps. An
// MCP answer carries no rate-limit headers, so the decision goes unshown.
func mcpAdmit(app *App) func(ctx context.Context, id *policy.Identity) error {
	return func(ctx context.Context, id *policy.Identity) error {
		ws := app.Controls().WorkspaceLimits(id.Workspace)
		hold, _, refusal := app.Rates().Admit(ctx, id, ws, 0)
		if refusal != nil {
			return refusal
		}
		hold.Release(0)
		return nil
	}
}

// mcpReserve admits a priced MCP tool call against every budget and
// spend limit of its caller, as a model request's worst case is admitted.
func mcpReserve(app *App) func(ctx context.Context, id *policy.Identity, session string, pico int64) (*policy.Reservation, error) {
	return func(ctx context.Context, id *policy.Identity, session string, pico int64) (*policy.Reservation, error) {
		hold, refusal := app.Budgets().Admit(ctx, id, app.Controls().WorkspaceLimits(id.Workspace), session, pico, mcpCallLease)
		if refusal != nil {
			return nil, refusal
		}
		return hold, nil
	}
}

// mcpCallLease bounds how long a priced tool call's reservation counts in
// the database should its instance stop before settling it.
const mcpCallLease = 10 * time.Minute

// mcpNotConnected is the readiness probe's list of MCP servers with no
// live session; nil (no list) when none is configured. The gateway is
// built after the handlers, so the func reads it when called.
func mcpNotConnected(g *Gateway, cfg *modellist.Config) func() []string {
	if len(cfg.MCPServers) == 0 {
		return nil
	}
	return func() []string {
		if g.mcp == nil {
			return nil
		}
		return g.mcp.NotConnected()
	}
}

// mcpObserver records the MCP gateway's tool calls in the ledger and the
// metrics, and logs its upstream sessions and stdio servers' stderr.
type mcpObserver struct {
	app     *App
	logger  *zap.Logger
	metrics *metrics
}

func (o *mcpObserver) ToolCall(_ context.Context, c mcp.Call) {
	o.metrics.mcpCalls.WithLabelValues(c.Server, string(c.Outcome)).Inc()
	outcome, status := c.Outcome.Ledger()
	rec := ledger.Record{
		Time:          time.Now().Add(-c.Duration).UTC(),
		RequestID:     c.Approval,
		KeyID:         c.KeyID,
		Workspace:     c.Workspace,
		Alias:         c.Server + "/" + c.Tool,
		Provider:      c.Server,
		UpstreamModel: c.Tool,
		Endpoint:      ledger.EndpointMCP,
		Status:        status,
		Outcome:       outcome,
		Latency:       c.Duration,
		SessionID:     c.Session,
		Bytes:         c.Bytes,
		Person:        c.Person,
		Groups:        c.Groups,
		CostPicoUSD:   c.Spend.Pico,
		Ticket:        c.Spend.Ticket,
		Lease:         c.Spend.Lease,
		LeasePico:     c.Spend.LeasePico,
	}
	if !o.app.Enqueue(rec) {
		o.logger.Error("ledger queue full; an MCP tool call went unrecorded", zap.String("server", c.Server), zap.String("tool", c.Tool))
	}
	o.logger.Debug("mcp tool call", zap.String("server", c.Server), zap.String("tool", c.Tool), zap.String("key", c.KeyID),
		zap.String("outcome", string(c.Outcome)), zap.Duration("duration", c.Duration), zap.Int64("bytes", c.Bytes), requested(c))
}

// requested logs the name a client asked for when the ledger has it as
// "(unknown)": bounded by the gateway, escaped here, debug log only.
func requested(c mcp.Call) zap.Field {
	if c.Requested == "" {
		return zap.Skip()
	}
	return zap.String("requested", strconv.QuoteToASCII(c.Requested))
}

// Upstream logs session changes; err's text comes from the SDK's
// transport and never contains the configured headers or env.
func (o *mcpObserver) Upstream(server string, err error) {
	if err != nil {
		o.logger.Warn("mcp server unavailable; retrying with backoff", zap.String("server", server), zap.Error(err))
		return
	}
	o.logger.Info("mcp server connected", zap.String("server", server))
}

func (o *mcpObserver) Ignored(server, why string) {
	o.logger.Debug("mcp server message dropped", zap.String("server", server), zap.String("why", why))
}

func (o *mcpObserver) Stderr(server, line string) {
	o.logger.Debug("mcp server stderr", zap.String("server", server), zap.String("line", line))
}
