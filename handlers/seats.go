package handlers

// Seats: requests served on the caller's own subscription
// (passthrough_auth). The upstream call carries the caller's credential
// (upstream.Deployment's seat credentials); here the door decides which
// budgets admit such a request and marks its record as notional.

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/providers"
	"github.com/modelgate/modelgate/upstream"
)

// budgetsFor is the budgets a request for alias is admitted against:
// none when every alias it may reach is a seat whose notional cost no
// budget counts (passthrough_budget unset). A chain that may end on the
// gateway's own account (a seat alias falling back to a paid one) is
// admitted as a paid request is, so a fallback never spends past a cap.
func (g *Gateway) budgetsFor(alias string) *policy.Budgets {
	chain := g.chains[alias]
	if len(chain) == 0 {
		return g.opts.Budgets
	}
	for _, link := range chain {
		if len(link.deployments) == 0 {
			continue
		}
		if e := link.deployments[0].Entry(); !e.PassthroughAuth || e.PassthroughBudget {
			return g.opts.Budgets
		}
	}
	return nil
}

// markSeat records whose account an attempt on b is served on: a seat's
// cost is notional, and counts against budgets only with
// passthrough_budget.
func markSeat(rec *ledger.Record, b *upstream.Deployment) {
	e := b.Entry()
	rec.Notional = e.PassthroughAuth
	rec.ReportOnly = e.PassthroughAuth && !e.PassthroughBudget
}

// KeyKnower tells a gateway key from anything else (policy.Auth.Knows).
type KeyKnower interface{ Knows(secret string) bool }

// SeatRequest marks r, whose gateway key came in upstream.SeatKeyHeader,
// as carrying the caller's own provider credential in Authorization and
// x-api-key, for passthrough_auth aliases to send on. It refuses a
// request whose Authorization or x-api-key is itself a gateway key (the
// key would leave the gateway) or that sends a second, different
// gateway key there.
func SeatRequest(r *http.Request, keys KeyKnower) (*http.Request, *providers.APIError) {
	for _, name := range [...]string{"Authorization", "X-Api-Key"} {
		vs := r.Header.Values(name)
		if len(vs) > 1 {
			// Every value would go on to the provider; one credential is
			// a seat's, and a second could be anything.
			return r, &providers.APIError{Status: http.StatusBadRequest, Code: "seat_credential_repeated",
				Message: "with " + upstream.SeatKeyHeader + " set, " + name + " is passed to the provider as your own credential and must be sent once; this request sends it " + strconv.Itoa(len(vs)) + " times"}
		}
		for _, v := range vs {
			if seatCarriesGatewayKey(v, keys) {
				return r, &providers.APIError{Status: http.StatusBadRequest, Code: "gateway_key_in_provider_header",
					Message: "with " + upstream.SeatKeyHeader + " set, Authorization and x-api-key are passed to the provider as your own credential, and this request has a gateway key there; send the gateway key in " + upstream.SeatKeyHeader + " only"}
			}
		}
	}
	return r.WithContext(upstream.WithSeatCredential(r.Context())), nil
}

// seatCarriesGatewayKey reports whether a provider header's value holds a
// gateway key: as it is, or after any scheme word (Bearer, Basic, a
// made-up one), since the value goes on to the provider whole.
func seatCarriesGatewayKey(v string, keys KeyKnower) bool {
	v = strings.TrimSpace(v)
	if v == "" {
		return false
	}
	if keys.Knows(v) {
		return true
	}
	_, rest, ok := strings.Cut(v, " ")
	return ok && keys.Knows(strings.TrimSpace(rest))
}

// seatRefused reports whether a seat's provider refused the caller's own
// credential or its subscription's limits: the caller's answer, which
// another deployment would give too and which says nothing of the
// deployment's health, so it is neither retried nor counted against it.
func seatRefused(b *upstream.Deployment, status int) bool {
	return b.Passthrough() && (status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusTooManyRequests)
}

// countedCost is what a request's record spends of its budgets: nothing
// for a seat whose notional cost no budget counts (ledger.Record's
// ReportOnly, which budget_spend leaves out too).
func countedCost(rec *ledger.Record) int64 {
	if rec.ReportOnly {
		return 0
	}
	return rec.CostPicoUSD
}

// seatFits reports whether a fallback link can serve r: a seat alias
// only a request that brought its own provider credential, so a paid
// alias's fallback to a seat alias is passed over for everyone else
// rather than answered with the seat's refusal.
func seatFits(x *exchange, link aliasLink) bool {
	return len(link.deployments) == 0 || !link.deployments[0].Passthrough() || x.call.Client.Seat != nil
}
