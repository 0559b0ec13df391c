package policy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
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
	// Names, when set, is the name of a runtime key or workspace by id
	// ("" when unknown): an alert says "bob-laptop (apikey_…)", as people
	// know their keys by name, not by the id the budgets count under.
	Names func(id string) string
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
	al.Label = namedIDs(al.Label, a.Names)
	if err := webhook.Post(ctx, a.client, a.url, AlertText(al)); err != nil {
		a.report(err)
	}
}

// Say posts one line that is no budget's alert (an increase request to
// its approvers, the answer to its person), without waiting for it.
func (a *Alerter) Say(text string) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := webhook.Post(ctx, a.client, a.url, text); err != nil {
			a.report(err)
		}
	}()
}

func (a *Alerter) report(err error) {
	if a.failed != nil {
		a.failed(err)
	}
}

// namedIDs puts the name of every runtime id in label before it, the id
// in parentheses: "api key apikey_x" becomes "api key bob-laptop
// (apikey_x)". Every label an alert carries (a key's, a workspace's, a
// session's, a cache watch's) names its key or workspace by id, so this
// one rewrite names them all. Runtime ids start with the prefixes the
// admin API and sign-in mint them with; a Caddyfile key or workspace is
// named by its name already.
func namedIDs(label string, names func(id string) string) string {
	if names == nil {
		return label
	}
	var b strings.Builder
	for rest := label; rest != ""; {
		i := -1
		for _, p := range [...]string{"apikey_", "wrkspc_"} {
			if j := strings.Index(rest, p); j >= 0 && (i < 0 || j < i) {
				i = j
			}
		}
		if i < 0 {
			b.WriteString(rest)
			break
		}
		end := i + strings.IndexFunc(rest[i:]+" ", func(r rune) bool { return !isIDRune(r) })
		id := rest[i:end]
		b.WriteString(rest[:i])
		if name := names(id); name != "" && name != id {
			b.WriteString(name + " (" + id + ")")
		} else {
			b.WriteString(id)
		}
		rest = rest[end:]
	}
	return b.String()
}

// isIDRune: ids are a prefix and lower-case base32 (rand.Text).
func isIDRune(r rune) bool {
	return r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
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
	// A refusal reaches a budget before its spend does when what is left
	// pays for less than a request needs: say so, or "$0.99 of $1.00"
	// reads as not reached.
	short, refused := "", "further requests"
	if al.NeedPico > 0 && al.SpentPico < al.LimitPico {
		short = ", less left than a request needs (" + dollarsUp(al.NeedPico) + " at least)"
		refused = "requests needing more than is left"
	}
	switch al.Kind {
	case "soft":
		return "⚠️ Soft budget reached — " + label + ": " + amounts + " soft budget (" + al.Period + ")" + resets
	case "80":
		return "⚠️ 80% of budget — " + label + ": " + amounts + " " + al.Period + resets
	case AlertCacheUnread:
		return fmt.Sprintf("🧊 Prompt cache written but never read — %s: %d cache writes and no cache read in its last %d requests, %s of cache writes since; "+
			"its prompt prefix changes every turn or its requests land where the cache is not", label, al.Writes, al.Window, dollarsFine(al.SpentPico))
	case "session":
		return "🛑 Session cap reached — " + label + ": " + amounts + " spent" + short + "; " + refused + " of this session are refused"
	}
	return "🚫 Budget reached — " + label + ": " + amounts + " " + al.Period + " spent" + short + resets + "; " + refused + " are refused"
}
