package mcp

// Priced tool calls (an MCP server's cost_per_call): each call's cost is
// admitted against every budget and spend limit of its caller before the
// server is called, as a model call's worst case is, and settled on the
// call's ledger record, which carries the person and groups, so that the
// person's, groups' and organization's limits count it as well as the
// key's.

import (
	"context"

	"github.com/modelgate/modelgate/policy"
)

// Spend is a priced call's cost and the reservation it settled, as its
// ledger record carries them (ledger.Record's CostPicoUSD, Ticket, Lease
// and LeasePico).
type Spend struct {
	Pico          int64
	Ticket, Lease uint64
	LeasePico     int64
}

// reserve admits a call of tool on u, whose server prices its calls,
// against the caller's budgets; nil, nil for a call that costs nothing or
// a gateway that keeps no budgets.
func (g *Gateway) reserve(ctx context.Context, u *upstream, tool string, id *policy.Identity, c *Call) (*policy.Reservation, error) {
	price := u.cfg.CostPerCallPico
	if price <= 0 || g.opts.Reserve == nil || id == nil {
		return nil, nil
	}
	hold, err := g.opts.Reserve(ctx, id, c.Session, price)
	if err != nil {
		c.Outcome = OutcomeLimited
		return nil, rpcError(codeLimited, "tool %q of MCP server %q: %v", tool, u.cfg.Name, err)
	}
	return hold, nil
}

// settle charges a call sent to its server the server's price, whatever
// the server answered (it may have done the paid work before failing),
// on the reservation hold (nil: none).
func (s *Spend) settle(hold *policy.Reservation, price int64) {
	s.Pico = max(price, 0)
	hold.Settle(s.Pico)
	s.Ticket = hold.Ticket()
	s.Lease, s.LeasePico = hold.Lease()
}
