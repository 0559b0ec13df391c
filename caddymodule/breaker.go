package caddymodule

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/modelgate/modelgate/breaker"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/money"
	"github.com/modelgate/modelgate/webhook"
)

// parseBreaker reads a key's, workspace's or group's
//
//	breaker {
//		repeat 5
//		cycle 3
//		failing 6
//		velocity 2/min
//		key_velocity 10/min
//		turns 1000
//		action pause
//	}
//
// where a rule left out takes its default and `off` turns it off; a bare
// `breaker` watches with every default and warns.
func parseBreaker(d *caddyfile.Dispenser) (*ledger.BreakerRules, error) {
	if d.NextArg() {
		return nil, d.Err("breaker: its rules go in a block, e.g. breaker { repeat 5; action pause }")
	}
	r := &ledger.BreakerRules{}
	for sub := d.Nesting(); d.NextBlock(sub); {
		opt := d.Val()
		var v string
		if !d.AllArgs(&v) {
			return nil, d.Errf("breaker %s: give one value", opt)
		}
		count := func(dst *int, least, max int) error {
			if v == "off" {
				*dst = -1
				return nil
			}
			n, err := strconv.Atoi(v)
			if err != nil || n < least || n > max {
				return d.Errf("breaker %s: %q is not a whole number from %d to %d, or off", opt, v, least, max)
			}
			*dst = n
			return nil
		}
		var err error
		switch opt {
		case "repeat":
			err = count(&r.Repeat, 2, breaker.MaxRepeat)
		case "cycle":
			err = count(&r.Cycle, 2, breaker.MaxCycle)
		case "failing":
			err = count(&r.Failing, 2, breaker.MaxFailing)
		case "turns":
			err = count(&r.Turns, 1, 1_000_000)
		case "velocity", "key_velocity":
			dst := &r.VelocityCents
			if opt == "key_velocity" {
				dst = &r.KeyVelocityCents
			}
			if v == "off" {
				*dst = -1
				break
			}
			amount, ok := strings.CutSuffix(v, "/min")
			c, perr := money.ParseDollars(strings.TrimPrefix(amount, "$"))
			if !ok || perr != nil || c < 1 {
				return nil, d.Errf("breaker %s: %q is not dollars a minute, e.g. %s 2/min (or off)", opt, v, opt)
			}
			*dst = c
		case "action":
			switch v {
			case breaker.ActionWarn, breaker.ActionNudge, breaker.ActionPause, breaker.ActionStop:
				r.Action = v
			default:
				err = d.Errf("breaker action: %q is not warn, nudge, pause or stop", v)
			}
		default:
			err = d.Errf("unrecognized breaker option %q (known: repeat, cycle, failing, velocity, key_velocity, turns, action)", opt)
		}
		if err != nil {
			return nil, err
		}
	}
	if err := breaker.Validate(r); err != nil {
		return nil, d.Err(err.Error())
	}
	return r, nil
}

// provisionBreaker builds the loop breaker: its sessions in Redis when
// rate limits are (`limits redis`), else in this process; its trips posted
// to alerts_webhook (with a resume link on publicURL, when set), recorded
// in the ledger and audited.
func (a *App) provisionBreaker(hook, publicURL string) {
	logger := a.logger
	var lastWarn atomic.Int64
	o := breaker.Options{
		Trips: func() ledger.BreakerStore {
			s, _ := a.Store().(ledger.BreakerStore)
			return s
		},
		Audit:     a.audit,
		Names:     a.controls.RuntimeName,
		PublicURL: publicURL,
		Owner:     a.keyOwner,
		PersonOf:  a.keyPerson,
		// A Redis that is down fails every request's watch: said once a
		// minute, not once a request.
		Failed: func(err error) {
			now := time.Now().Unix()
			if last := lastWarn.Load(); now-last >= 60 && lastWarn.CompareAndSwap(last, now) {
				logger.Warn("loop breaker: requests go on unwatched while this lasts", zap.Error(err))
			}
		},
	}
	if a.redis != nil {
		o.Store = breaker.NewRedis(a.redis.Client(), "modelgate:breaker:")
	} else if v, _, err := states.LoadOrNew(breakerSessionsKey, func() (caddy.Destructor, error) {
		return breakerSessions{breaker.NewMemory(50_000)}, nil
	}); err == nil {
		// A reload keeps the sessions, a pause among them.
		o.Store, a.breakerPooled = v.(breakerSessions).Memory, true
	}
	if hook != "" {
		client := &http.Client{Timeout: 10 * time.Second}
		o.Post = func(ctx context.Context, text string) error { return webhook.Post(ctx, client, hook, text) }
	}
	a.breaker = breaker.New(o)
}

// keyOwner is the person a runtime key was minted for (sign-in's keys):
// their email, else their subject; "" for other keys.
func (a *App) keyOwner(keyID string) string {
	keys, _ := a.controls.Runtime()
	for _, k := range keys {
		if k.ID == keyID && k.CreatedBy != nil {
			if k.CreatedBy.Email != "" {
				return k.CreatedBy.Email
			}
			return k.CreatedBy.Subject
		}
	}
	return ""
}

// keyPerson is the person a runtime key was minted for as its identity
// names them (policy.Identity's Owner): the owner of its conversations
// in the loop breaker; "" for other keys.
func (a *App) keyPerson(keyID string) string {
	keys, _ := a.controls.Runtime()
	for _, k := range keys {
		if k.ID == keyID && k.CreatedBy != nil && k.CreatedBy.Type == "oidc" {
			return k.CreatedBy.ID
		}
	}
	return ""
}

// breakerSessions lets the in-process sessions outlive a config reload in
// the states pool.
type breakerSessions struct{ *breaker.Memory }

func (breakerSessions) Destruct() error { return nil }

const breakerSessionsKey = "breaker-sessions"

// releaseBreaker gives back this config's hold on the pooled sessions.
func (a *App) releaseBreaker() {
	if a.breakerPooled {
		a.breakerPooled = false
		_, _ = states.Delete(breakerSessionsKey)
	}
}

// Breaker is the loop breaker of this config.
func (a *App) Breaker() *breaker.Breaker { return a.breaker }

// RecordTrip and BreakerTrips reach the app's ledger once it is open.
func (s appStore) RecordTrip(ctx context.Context, t ledger.BreakerTrip) error {
	st, err := s.store()
	if err != nil {
		return err
	}
	b, ok := st.(ledger.BreakerStore)
	if !ok {
		return errors.New("this ledger store keeps no loop breaker trips")
	}
	return b.RecordTrip(ctx, t)
}

func (s appStore) BreakerTrips(ctx context.Context, from, to time.Time) ([]ledger.BreakerTrip, error) {
	st, err := s.store()
	if err != nil {
		return nil, err
	}
	b, ok := st.(ledger.BreakerStore)
	if !ok {
		return nil, errors.New("this ledger store keeps no loop breaker trips")
	}
	return b.BreakerTrips(ctx, from, to)
}

// registerBreakerMetrics counts the loop breaker's trips of this instance
// (modelgate_breaker_trips_total, by pattern and action): one series per
// pair, so none appears or vanishes with traffic.
func registerBreakerMetrics(reg prometheus.Registerer, app *App) error {
	patterns, actions := breaker.Kinds()
	for _, p := range patterns {
		for _, ac := range actions {
			if _, err := register(reg, prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: "modelgate", Name: "breaker_trips_total",
				Help:        "Agent sessions the loop breaker tripped, by the pattern it saw and the action it took.",
				ConstLabels: prometheus.Labels{"pattern": p, "action": ac}},
				func() float64 { return float64(app.Breaker().TripCount(p, ac)) })); err != nil {
				return err
			}
		}
	}
	return nil
}
