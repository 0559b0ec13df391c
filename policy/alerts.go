package policy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/webhook"
)

// Alerter posts budget alerts to a team chat webhook, one line each in the
// agent hook's style and escaping. Each alert is claimed in the ledger
// database first, so of several instances that saw the same crossing only
// one posts it, once per scope, period and kind.
type Alerter struct {
	url    string
	client *http.Client
	claim  func() ledger.AlertClaimer
	queue  chan BudgetAlert
	failed func(error)
}

// NewAlerter posts to url; claim returns the store that dedupes alerts.
func NewAlerter(url string, claim func() ledger.AlertClaimer, failed func(error)) *Alerter {
	return &Alerter{url: url, client: &http.Client{Timeout: 10 * time.Second}, claim: claim,
		queue: make(chan BudgetAlert, 256), failed: failed}
}

// Notify queues an alert without blocking; a full queue drops it (the
// next crossing of a flooded gateway is not worth a stuck request).
func (a *Alerter) Notify(al BudgetAlert) {
	select {
	case a.queue <- al:
	default:
	}
}

// Run posts queued alerts until ctx ends.
func (a *Alerter) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case al := <-a.queue:
			a.post(ctx, al)
		}
	}
}

func (a *Alerter) post(ctx context.Context, al BudgetAlert) {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if c := a.claim(); c != nil {
		first, err := c.ClaimAlert(ctx, al.Scope, al.ScopeID, al.PeriodStart, al.Kind)
		if err != nil {
			// Sending unclaimed could post the same alert from every
			// instance; the next crossing tries again.
			a.report(fmt.Errorf("claiming a budget alert: %w", err))
			return
		}
		if !first {
			return
		}
	}
	if err := webhook.Post(ctx, a.client, a.url, AlertText(al)); err != nil {
		a.report(err)
	}
}

func (a *Alerter) report(err error) {
	if a.failed != nil {
		a.failed(err)
	}
}

// dollarsFine shows small amounts to the tenth of a cent: cache writes of
// a few turns cost less than a cent.
func dollarsFine(pico int64) string {
	mills := pico / 1e9
	return fmt.Sprintf("$%d.%03d", mills/1000, mills%1000)
}

// AlertText is the one line an alert posts.
func AlertText(al BudgetAlert) string {
	label := webhook.Clean(al.Label, 160)
	resets := ""
	if !al.Resets.IsZero() {
		resets = ", resets " + al.Resets.UTC().Format("2006-01-02 15:04") + " UTC"
	}
	amounts := dollars(al.SpentPico) + " of " + dollars(al.LimitPico)
	switch al.Kind {
	case "soft":
		return "⚠️ Soft budget reached — " + label + ": " + amounts + " soft budget (" + al.Period + ")" + resets
	case "80":
		return "⚠️ 80% of budget — " + label + ": " + amounts + " " + al.Period + resets
	case AlertCacheUnread:
		return fmt.Sprintf("🧊 Prompt cache written but never read — %s: %d cache writes and no cache read in its last %d requests, %s of cache writes since; "+
			"its prompt prefix changes every turn or its requests land where the cache is not", label, al.Writes, al.Window, dollarsFine(al.SpentPico))
	case "session":
		return "🛑 Session cap reached — " + label + ": " + amounts + "; further requests of this session are refused"
	}
	return "🚫 Budget reached — " + label + ": " + amounts + " " + al.Period + resets + "; further requests are refused"
}
