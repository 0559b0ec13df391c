package caddymodule

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/handlers"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
	"github.com/modelgate/modelgate/ratecount"
)

func init() {
	caddy.RegisterModule(App{})
	httpcaddyfile.RegisterGlobalOption("modelgate", parseAppOption)
}

// ledgers shares one open store and writer per ledger identity across
// config reloads: the new config starts before the old one stops, and both
// must feed the same writer so that nothing queued is lost. Deployment
// state (in-flight counts, latency, cooldowns) is shared the same way.
var (
	ledgers = caddy.NewUsagePool()
	states  = caddy.NewUsagePool()
)

// App is the `modelgate` app: it owns the usage ledger. Handlers enqueue
// records into it; it opens the store when Caddy starts it and flushes
// and closes it on stop.
type App struct {
	// onStart are the handlers' start steps (the MCP gateway's upstream
	// sessions): run by Start, never by `caddy validate`.
	onStart []func()
	// Ledger selects the store: `sqlite` with a file path (default: a file
	// in Caddy's data directory) or `postgres` with a DSN. Placeholders
	// such as {env.DATABASE_URL} are expanded.
	Ledger *LedgerConfig `json:"ledger,omitempty"`

	// QueueSize is how many records may wait for the database before new
	// ones are counted as dropped. Default 10000.
	QueueSize int `json:"queue_size,omitempty"`

	// Durability is "async" (default: records are written in batches
	// within the flush interval, 200 ms, after their request ended, so a
	// kill -9 can lose that window) or "sync": a successful request's
	// record is in the database before the client has the end of its
	// answer, for teams that bill from the ledger.
	Durability string `json:"durability,omitempty"`

	// AlertsWebhook receives budget alerts (soft budget, 80 %, 100 %, a
	// session cap) and the alert on a session that keeps writing a prompt
	// cache it never reads, one line each: a Slack, Discord or Teams
	// incoming webhook URL. Placeholders such as {env.CHAT_WEBHOOK_URL} are expanded.
	AlertsWebhook string `json:"alerts_webhook,omitempty"`

	// PublicURL is the gateway's base URL as people's browsers reach it
	// (https://gateway.example.com): the base of every link it posts to a
	// chat (public_url.go); without it, the chat lines carry no link.
	PublicURL string `json:"public_url,omitempty"`

	// MCPApprovals is where MCP tool calls that need a person's approval
	// are announced, and their default wait.
	MCPApprovals *MCPApprovalsConfig `json:"mcp_approvals,omitempty"`

	// MCPTokenKey seals people's own tokens to auth: oauth MCP servers in
	// the ledger (mcp_upstream_auth.go); a placeholder such as
	// {env.MCP_TOKEN_KEY}.
	MCPTokenKey string `json:"mcp_token_key,omitempty"`

	// Limits is where rate limits are counted: "redis" with a URL shares
	// them between instances; default: in each process.
	Limits *LimitsBackend `json:"limits,omitempty"`

	// ResponseRetention is how long stored Responses API responses
	// (store: true) are kept before they are purged. Default 30 days.
	ResponseRetention caddy.Duration `json:"response_retention,omitempty"`

	// Retention is how long usage records are kept before they are purged
	// (at start and hourly). Default 0: kept forever. The hourly and daily
	// roll-ups are kept, so reports over whole hours and days of any age
	// still answer; minute buckets and the sessions and Claude Code
	// reports, which read the records, end at the cutoff.
	Retention caddy.Duration `json:"retention,omitempty"`

	// Batches sets the batch APIs (batches.go); nil: the defaults.
	Batches *BatchConfig `json:"batches,omitempty"`

	purgeStop chan struct{} // closed by Stop; nil before Start
	// controls are the runtime keys and workspaces; stopPoll ends their
	// refresh loop.
	controls *policy.Controls
	audit    *audit.Log // appends to the ledger database's audit table
	budgets  *policy.Budgets
	alerter  *policy.Alerter
	// leads are the group rules' leads, who resolve their members'
	// spend limit increase requests (spend.go).
	leads *atomic.Pointer[map[string][]string]
	// publicURL is PublicURL resolved, without a trailing slash.
	publicURL string
	// downgrades check at_cap downgrade aliases (spend.go).
	downgrades *downgradeTargets
	// cacheWatch alerts on sessions that write a prompt cache they never
	// read; nil without alerts_webhook.
	cacheWatch *policy.CacheWatch
	rates      *policy.RateLimits
	stopPoll   context.CancelFunc
	key        string
	dsn        string
	run        *appRun // made in Provision; a pointer, because App is copied by value
	logger     *zap.Logger
	// stopped keeps Stop idempotent while shared stays set: requests of
	// this config still streaming after a reload must reach the writer,
	// which the new config shares.
	stopped bool
	// holders counts the app itself and every llm_gateway handler of this
	// config. Caddy stops apps in no fixed order and cleans handlers up only
	// after the HTTP server drained, so the ledger reference is given back
	// when the last holder lets go: no record of a request that finishes
	// during shutdown is lost.
	holders int64 // accessed with sync/atomic; App is copied by value in CaddyModule

	// redis is the shared rate-limit Redis (`limits redis`), nil without;
	// breaker the loop breaker, its sessions there when it is set.
	redis   *ratecount.Redis
	breaker *breaker.Breaker
	// breakerPooled: the breaker's sessions are the pooled in-process
	// ones, held until Stop.
	breakerPooled bool
}

// appRun is the app's running state. Caddy starts apps in no fixed order,
// so the HTTP server may take requests before this app's Start opened the
// ledger: records of those requests wait in early (bounded by the queue
// size) and Start hands them to the writer.
type appRun struct {
	shared atomic.Pointer[sharedLedger]
	mu     sync.Mutex
	early  []ledger.Record
	limit  int
}

// LedgerConfig names the ledger store.
type LedgerConfig struct {
	// Driver is "sqlite" or "postgres".
	Driver string `json:"driver,omitempty"`
	// DSN is the SQLite file path or the PostgreSQL connection string.
	DSN string `json:"dsn,omitempty"`
}

// resolve is the store's driver ("sqlite" or "postgres") and its DSN with
// placeholders replaced; SQLite defaults to Caddy's data directory.
func (l *LedgerConfig) resolve() (driver, dsn string, err error) {
	dsn, err = caddy.NewReplacer().ReplaceOrErr(l.DSN, true, true)
	if err != nil {
		return "", "", fmt.Errorf("ledger: %v", err)
	}
	switch l.Driver {
	case "", "sqlite":
		if dsn == "" {
			dsn = filepath.Join(caddy.AppDataDir(), "modelgate", "ledger.db")
		}
		return "sqlite", dsn, nil
	case "postgres", "postgresql":
		if dsn == "" {
			return "", "", errors.New("ledger postgres: a connection string is required, e.g. ledger postgres {env.DATABASE_URL}")
		}
		return "postgres", dsn, nil
	}
	return "", "", fmt.Errorf("ledger: unknown store %q; use sqlite or postgres", l.Driver)
}

// CaddyModule returns the Caddy module information.
func (App) CaddyModule() caddy.ModuleInfo {
	return caddy.ModuleInfo{ID: "modelgate", New: func() caddy.Module { return new(App) }}
}

// Provision resolves the ledger location without touching it: `caddy
// validate` provisions but never starts, and must not create files.
func (a *App) Provision(ctx caddy.Context) error {
	a.logger = ctx.Logger()
	a.controls = policy.NewControls(nil)
	a.leads = new(atomic.Pointer[map[string][]string])
	a.downgrades = &downgradeTargets{}
	a.audit = &audit.Log{Source: a.controls}
	if err := a.provisionRates(); err != nil {
		return err
	}
	a.budgets = policy.NewBudgets(func() ledger.SpendStore {
		ss, _ := a.Store().(ledger.SpendStore)
		return ss
	}, nil)
	hook := ""
	if a.AlertsWebhook != "" {
		var err error
		hook, err = caddy.NewReplacer().ReplaceOrErr(a.AlertsWebhook, true, true)
		if err != nil {
			return fmt.Errorf("alerts_webhook: %v", err)
		}
		if !strings.HasPrefix(hook, "https://") && !strings.HasPrefix(hook, "http://") {
			// The URL is a credential: never echo it.
			return errors.New("alerts_webhook: want the chat's incoming webhook URL (https://…)")
		}
		logger := a.logger
		a.alerter = policy.NewAlerter(hook, func() ledger.AlertClaimer {
			c, _ := a.Store().(ledger.AlertClaimer)
			return c
		}, func(err error) { logger.Warn("a budget alert was not posted", zap.Error(err)) })
		a.alerter.Names = a.controls.RuntimeName
		a.budgets.Alert = a.alerter.Notify
		a.cacheWatch = policy.NewCacheWatch(a.alerter.Notify)
	}
	if err := a.MCPApprovals.provision(); err != nil {
		return err
	}
	if err := a.provisionPublicURL(); err != nil {
		return err
	}
	a.provisionBreaker(hook, a.publicURL)
	switch a.Durability {
	case "", "async", "sync":
	default:
		return fmt.Errorf("durability: %q is not a mode; use sync or async", a.Durability)
	}
	if r := time.Duration(a.Retention); r != 0 && r < minRetention {
		return fmt.Errorf("retention: %v is shorter than a day; leave it out to keep usage records forever", r)
	}
	if a.Ledger == nil {
		a.Ledger = &LedgerConfig{Driver: "sqlite"}
	}
	driver, dsn, err := a.Ledger.resolve()
	if err != nil {
		return err
	}
	a.Ledger.Driver, a.dsn = driver, dsn
	a.key = a.Ledger.Driver + "|" + dsn
	atomic.StoreInt64(&a.holders, 1)
	limit := a.QueueSize
	if limit <= 0 {
		limit = 10000
	}
	a.run = &appRun{limit: limit}
	return nil
}

// hold registers a handler that will enqueue records until its Cleanup.
func (a *App) hold() { atomic.AddInt64(&a.holders, 1) }

// release lets go of one hold; the last one returns the pooled ledger,
// which flushes and closes it when no other config shares it.
func (a *App) release() error {
	if atomic.AddInt64(&a.holders, -1) != 0 || a.shared() == nil {
		return nil
	}
	_, err := ledgers.Delete(a.key)
	return err
}

// sharedLedger is the pooled store and writer.
type sharedLedger struct {
	store  ledger.Store
	writer *ledger.Writer
	// probe* throttle the database probes of down to one a second.
	probeMu  sync.Mutex
	probedAt time.Time
	probeErr error
	// written is told of every batch written: the budgets of the config
	// now running, which a reload replaces.
	written atomic.Pointer[policy.Budgets]
}

// Destruct flushes the queue and closes the store once no config uses it.
func (s *sharedLedger) Destruct() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := s.writer.Close(ctx)
	if cerr := s.store.Close(); err == nil {
		err = cerr
	}
	return err
}

// Start opens (or shares) the store and starts the writer.
func (a *App) Start() error {
	v, _, err := ledgers.LoadOrNew(a.key, func() (caddy.Destructor, error) {
		var store ledger.Store
		var err error
		switch a.Ledger.Driver {
		case "postgres":
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			store, err = ledger.OpenPostgres(ctx, a.dsn)
			if err == nil {
				err = claimInstance(ctx, store)
			}
		default:
			store, err = ledger.OpenSQLite(a.dsn)
		}
		if err != nil {
			return nil, fmt.Errorf("opening %s ledger: %w", a.Ledger.Driver, redactDSN(err, a.dsn))
		}
		logger := a.logger
		s := &sharedLedger{store: store}
		s.writer = ledger.NewWriter(store, ledger.WriterOptions{
			QueueSize: a.QueueSize,
			Logger: func(msg string, err error) {
				logger.Error(msg, zap.Error(err))
			},
			Done: func(batch []ledger.Record) { s.written.Load().Written(batch) },
		})
		s.writer.Start()
		return s, nil
	})
	if err != nil {
		return err
	}
	shared := v.(*sharedLedger)
	shared.written.Store(a.budgets)
	r := a.run
	r.mu.Lock()
	r.shared.Store(shared)
	early := r.early
	r.early = nil
	r.mu.Unlock()
	for _, rec := range early {
		shared.writer.Enqueue(rec)
	}
	a.purgeStop = make(chan struct{})
	if rs, ok := shared.store.(ledger.ResponseStore); ok {
		keep := time.Duration(a.ResponseRetention)
		if keep <= 0 {
			keep = defaultResponseRetention
		}
		go a.purgeEvery("expired responses", keep, rs.PurgeResponses, a.purgeStop)
	}
	if rp, ok := shared.store.(ledger.RecordPurger); ok && a.Retention > 0 {
		go a.purgeEvery("usage records past retention", time.Duration(a.Retention), rp.PurgeRecords, a.purgeStop)
	}
	if ap, ok := shared.store.(ledger.MCPApprovalPurger); ok && a.Retention > 0 {
		go a.purgeEvery("MCP approvals past retention", time.Duration(a.Retention), ap.PurgeMCPApprovals, a.purgeStop)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.stopPoll = cancel
	logger := a.logger
	// Every second: a key revoked, or a budget spent, on one instance is
	// seen by all within the 2 seconds the design promises. A database
	// that cannot be read leaves the last keys and spend in force.
	warnEvery := func(what string) func(error) {
		var last time.Time
		return func(err error) {
			if time.Since(last) > time.Minute {
				last = time.Now()
				logger.Warn(what, zap.Error(err))
			}
		}
	}
	if cs, ok := shared.store.(ledger.ControlStore); ok {
		a.controls.SetStore(cs)
		go a.controls.Poll(ctx, time.Second, warnEvery("reading runtime keys from the ledger failed; serving on the last ones read"))
		// Every config load (the first and each reload) starts a new App:
		// the audit log records it.
		go a.audit.Record(ctx, audit.Event{Time: time.Now(), Actor: "config", Action: "config.reload", Target: "modelgate",
			Source: "local", Fields: map[string]string{"ledger_driver": a.Ledger.Driver}})
	}
	go a.budgets.Poll(ctx, time.Second, warnEvery("reading budget spend from the ledger failed; serving on the last spend read"))
	if a.alerter != nil {
		go a.alerter.Run(ctx)
	}
	go a.breaker.Run(ctx)
	for _, f := range a.onStart {
		f()
	}
	return nil
}

// Rates are the rate limits of this config.
func (a *App) Rates() *policy.RateLimits { return a.rates }

// Budgets are the budget admission of this config.
func (a *App) Budgets() *policy.Budgets { return a.budgets }

// CacheWatch is the unread-cache alert's watch, nil without alerts_webhook.
func (a *App) CacheWatch() *policy.CacheWatch { return a.cacheWatch }

// Audit is the audit log of this config's admin actions.
func (a *App) Audit() *audit.Log { return a.audit }

// Controls are the runtime keys and workspaces of this config.
func (a *App) Controls() *policy.Controls { return a.controls }

// defaultResponseRetention is how long stored responses live by default.
const defaultResponseRetention = 30 * 24 * time.Hour

// minRetention is the shortest usage-record retention: the minute report
// covers up to a day, and reads records.
const minRetention = 24 * time.Hour

// purgeEvery deletes what is older than keep (stored responses, usage
// records) at start and hourly. Every instance on a shared database does
// it; the deletes are idempotent.
func (a *App) purgeEvery(what string, keep time.Duration, purge func(context.Context, time.Time) (int64, error), stop chan struct{}) {
	t := time.NewTicker(time.Hour)
	defer t.Stop()
	for {
		// A first purge of years of records may take long; records go in
		// committed chunks, so a purge cut short by Stop or the timeout
		// goes on from there an hour later.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		done := make(chan struct{})
		go func() {
			select {
			case <-stop:
				cancel()
			case <-done:
			}
		}()
		n, err := purge(ctx, time.Now().Add(-keep))
		close(done)
		cancel()
		select {
		case <-stop:
			return
		default:
		}
		switch {
		case err != nil:
			a.logger.Warn("purging "+what+" failed", zap.Error(err))
		case n > 0:
			a.logger.Info("purged "+what, zap.Int64("rows", n), zap.Duration("retention", keep))
		}
		select {
		case <-stop:
			return
		case <-t.C:
		}
	}
}

// ResponseStore is where Responses API state lives, nil before Start.
func (a *App) ResponseStore() ledger.ResponseStore {
	rs, _ := a.Store().(ledger.ResponseStore)
	return rs
}

// shared is the open ledger, nil before Start.
func (a *App) shared() *sharedLedger {
	if a.run == nil {
		return nil
	}
	return a.run.shared.Load()
}

// redactDSN keeps a PostgreSQL password out of an error that quotes the DSN.
func redactDSN(err error, dsn string) error {
	msg := err.Error()
	if dsn != "" && strings.Contains(msg, dsn) {
		msg = strings.ReplaceAll(msg, dsn, "<dsn>")
	}
	return errors.New(msg)
}

// Stop releases this config's reference; the last one flushes and closes.
func (a *App) Stop() error {
	a.releaseBreaker()
	if a.shared() == nil || a.stopped {
		return nil
	}
	a.stopped = true
	// The slots and window chunks this instance holds in Redis go back
	// now, not when their timers run out.
	a.rates.Flush()
	if a.purgeStop != nil {
		close(a.purgeStop)
	}
	if a.stopPoll != nil {
		a.stopPoll()
	}
	return a.release()
}

// Enqueue hands a record to the writer without blocking.
func (a *App) Enqueue(rec ledger.Record) bool {
	r := a.run
	if s := r.shared.Load(); s != nil {
		return s.writer.Enqueue(rec)
	}
	r.mu.Lock()
	if s := r.shared.Load(); s != nil {
		r.mu.Unlock()
		return s.writer.Enqueue(rec)
	}
	defer r.mu.Unlock()
	if len(r.early) >= r.limit {
		return false
	}
	r.early = append(r.early, rec)
	return true
}

// Commit writes rec and waits until it is in the database.
func (a *App) Commit(ctx context.Context, rec ledger.Record) error {
	if s := a.run.shared.Load(); s != nil {
		return s.writer.Commit(ctx, rec)
	}
	// Before Start (Caddy starts apps in no fixed order) the record waits
	// in the early queue like any other; nothing can be waited on yet.
	if !a.Enqueue(rec) {
		return ledger.ErrNotQueued
	}
	return nil
}

// Durable reports whether records are written before answers complete.
func (a *App) Durable() bool { return a.Durability == "sync" }

// Store is the ledger store for reports, nil before Start.
func (a *App) Store() ledger.Store {
	s := a.shared()
	if s == nil {
		return nil
	}
	return s.store
}

// Stats reports the writer's counters for metrics.
func (a *App) Stats() ledger.WriterStats {
	s := a.shared()
	if s == nil {
		if a.run != nil {
			a.run.mu.Lock()
			defer a.run.mu.Unlock()
			return ledger.WriterStats{QueueDepth: int64(len(a.run.early))}
		}
		return ledger.WriterStats{}
	}
	return s.writer.Stats()
}

// LedgerDown reports an error while the ledger writer is known to be
// failing, for durability sync to refuse requests it could not record.
// While the writer is healthy it costs an atomic load; while it fails, one
// caller a second probes the database (so a gateway whose requests are all
// refused still sees it come back) and the others take that answer.
// Before Start it reports nothing: records wait in the early queue.
func (a *App) LedgerDown() error {
	s := a.shared()
	if s == nil || !s.writer.Failing() {
		return nil
	}
	if !s.probeMu.TryLock() {
		return ledger.ErrLedgerUnhealthy
	}
	defer s.probeMu.Unlock()
	if time.Since(s.probedAt) < time.Second {
		return s.probeErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s.probeErr = s.writer.Health(ctx)
	s.probedAt = time.Now()
	return s.probeErr
}

// Ready reports whether records reach the database now.
func (a *App) Ready() error {
	s := a.shared()
	if s == nil {
		return errors.New("ledger not started")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return s.writer.Health(ctx)
}

var _ handlers.Recorder = (*App)(nil)

// parseAppOption parses the global option:
//
//	modelgate {
//		ledger sqlite /var/lib/modelgate/ledger.db
//		ledger postgres {env.DATABASE_URL}
//		queue_size 10000
//		retention 400d
//	}
func parseAppOption(d *caddyfile.Dispenser, existing any) (any, error) {
	if existing != nil {
		return nil, d.Err("modelgate global option specified more than once; merge the blocks")
	}
	a := new(App)
	d.Next()
	if d.NextArg() {
		return nil, d.ArgErr()
	}
	for nesting := d.Nesting(); d.NextBlock(nesting); {
		switch d.Val() {
		case "ledger":
			if a.Ledger != nil {
				return nil, d.Err("ledger already specified")
			}
			args := d.RemainingArgs()
			if len(args) < 1 || len(args) > 2 {
				return nil, d.Errf("ledger: want `ledger sqlite [path]` or `ledger postgres <dsn>`, got %d arguments", len(args))
			}
			a.Ledger = &LedgerConfig{Driver: args[0]}
			if len(args) == 2 {
				a.Ledger.DSN = args[1]
			}
			if a.Ledger.Driver != "sqlite" && a.Ledger.Driver != "postgres" {
				return nil, d.Errf("ledger: unknown store %q; use sqlite or postgres", a.Ledger.Driver)
			}
		case "durability":
			if !d.NextArg() || d.CountRemainingArgs() > 0 {
				return nil, d.ArgErr()
			}
			a.Durability = d.Val()
			if a.Durability != "sync" && a.Durability != "async" {
				return nil, d.Errf("durability: %q is not a mode; use sync (write each record before the answer completes) or async (the default: batched)", a.Durability)
			}
		case "alerts_webhook":
			if !d.AllArgs(&a.AlertsWebhook) {
				return nil, d.Err("alerts_webhook: give the chat's incoming webhook URL, e.g. alerts_webhook {env.CHAT_WEBHOOK_URL}")
			}
		case "public_url":
			if !d.AllArgs(&a.PublicURL) {
				return nil, d.Err("public_url: give the gateway's base URL as people's browsers reach it, e.g. public_url https://gateway.example.com")
			}
		case "mcp_token_key":
			if !d.AllArgs(&a.MCPTokenKey) {
				return nil, d.Err("mcp_token_key: give one key of at least 32 random bytes, e.g. mcp_token_key {env.MCP_TOKEN_KEY}")
			}
		case "mcp_approvals":
			c, err := parseMCPApprovals(d)
			if err != nil {
				return nil, err
			}
			a.MCPApprovals = c
		case "limits":
			args := d.RemainingArgs()
			switch {
			case len(args) == 1 && args[0] == "local":
				a.Limits = &LimitsBackend{Driver: "local"}
			case len(args) == 2 && args[0] == "redis":
				a.Limits = &LimitsBackend{Driver: "redis", URL: args[1]}
			default:
				return nil, d.Err("limits: want `limits redis <url>` (shared by every instance) or `limits local`")
			}
			for inner := d.Nesting(); d.NextBlock(inner); {
				if d.Val() != "slot_lease" {
					return nil, d.Errf("limits: unknown option %q; want slot_lease <duration>", d.Val())
				}
				var v string
				if !d.AllArgs(&v) {
					return nil, d.ArgErr()
				}
				dur, err := caddy.ParseDuration(v)
				if err != nil || dur < time.Second {
					return nil, d.Errf("limits slot_lease: %q is not a duration of at least 1s (e.g. 10m)", v)
				}
				a.Limits.SlotLease = caddy.Duration(dur)
			}
		case "response_retention":
			var s string
			if !d.AllArgs(&s) {
				return nil, d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur <= 0 {
				return nil, d.Errf("response_retention: %q is not a positive duration (e.g. 30d, 72h)", s)
			}
			a.ResponseRetention = caddy.Duration(dur)
		case "retention":
			var s string
			if !d.AllArgs(&s) {
				return nil, d.ArgErr()
			}
			dur, err := caddy.ParseDuration(s)
			if err != nil || dur < minRetention {
				return nil, d.Errf("retention: %q is not a duration of at least 1d (e.g. 400d); leave it out to keep usage records forever", s)
			}
			a.Retention = caddy.Duration(dur)
		case "queue_size":
			var s string
			if !d.AllArgs(&s) {
				return nil, d.ArgErr()
			}
			n, err := strconv.Atoi(s)
			if err != nil || n <= 0 {
				return nil, d.Errf("queue_size: want a positive whole number, got %q", s)
			}
			a.QueueSize = n
		case "batches":
			if err := a.parseBatches(d); err != nil {
				return nil, err
			}
		default:
			return nil, d.Errf("unrecognized modelgate option %q", d.Val())
		}
	}
	return httpcaddyfile.App{Name: "modelgate", Value: caddyconfig.JSON(a, nil)}, nil
}

// Interface guards.
var (
	_ caddy.App         = (*App)(nil)
	_ caddy.Provisioner = (*App)(nil)
)
