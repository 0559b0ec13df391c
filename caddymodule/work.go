package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/forge"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// workStore is the app's ledger as a work store, nil while it is not open.
func workStore(app *App) func() ledger.WorkStore {
	return func() ledger.WorkStore {
		ws, _ := app.Store().(ledger.WorkStore)
		return ws
	}
}

// workContexts takes sessions' work contexts under the caller's key.
func workContexts(app *App) *forge.Contexts {
	return &forge.Contexts{
		Store: workStore(app),
		Caller: func(r *http.Request) (string, bool) {
			id := policy.IdentityFrom(r.Context())
			if id == nil {
				return "", false
			}
			return id.KeyID, true
		},
	}
}

var errNoWorkStore = errors.New("this ledger store keeps no work contexts")

func (s appStore) work() (ledger.WorkStore, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	ws, ok := st.(ledger.WorkStore)
	if !ok {
		return nil, errNoWorkStore
	}
	return ws, nil
}

func (s appStore) PutWorkContext(ctx context.Context, c ledger.WorkContext) error {
	ws, err := s.work()
	if err != nil {
		return err
	}
	return ws.PutWorkContext(ctx, c)
}

func (s appStore) PutPull(ctx context.Context, p ledger.Pull) error {
	ws, err := s.work()
	if err != nil {
		return err
	}
	return ws.PutPull(ctx, p)
}

func (s appStore) ClaimDelivery(ctx context.Context, forge, id string, at time.Time) (bool, error) {
	ws, err := s.work()
	if err != nil {
		return false, err
	}
	return ws.ClaimDelivery(ctx, forge, id, at)
}

func (s appStore) Pulls(ctx context.Context, repos []string) ([]ledger.Pull, error) {
	ws, err := s.work()
	if err != nil {
		return nil, err
	}
	return ws.Pulls(ctx, repos)
}

func (s appStore) MarkCommented(ctx context.Context, repo string, number int64, at time.Time) (bool, error) {
	ws, err := s.work()
	if err != nil {
		return false, err
	}
	return ws.MarkCommented(ctx, repo, number, at)
}

func (s appStore) UnmarkCommented(ctx context.Context, repo string, number int64) error {
	ws, err := s.work()
	if err != nil {
		return err
	}
	return ws.UnmarkCommented(ctx, repo, number)
}

func (s appStore) WorkRows(ctx context.Context, f ledger.Filter, width time.Duration) ([]ledger.WorkRow, error) {
	ws, err := s.work()
	if err != nil {
		return nil, err
	}
	return ws.WorkRows(ctx, f, width)
}

// agentMetrics keeps coding agents' work metrics in the ledger.
func agentMetrics(app *App) func(ctx context.Context, keyID string, pts []ledger.AgentMetric) error {
	return func(ctx context.Context, keyID string, pts []ledger.AgentMetric) error {
		ms, ok := app.Store().(ledger.AgentMetricStore)
		if !ok {
			return errLedgerNotStarted
		}
		return ms.PutAgentMetrics(ctx, keyID, pts)
	}
}

func (s appStore) AgentMetricsDay(ctx context.Context, day time.Time, keys []string) ([]ledger.AgentMetricRow, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	ms, ok := st.(ledger.AgentMetricStore)
	if !ok {
		return nil, errors.New("this ledger store keeps no agent metrics")
	}
	return ms.AgentMetricsDay(ctx, day, keys)
}
