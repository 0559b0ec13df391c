package upstream

import (
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelgate/modelgate/modellist"
)

// State is the runtime state of one deployment: in-flight requests,
// latency, failures, cooldown and rate windows. Its owner keys it by the
// deployment's stable ID so that a config reload which keeps the
// deployment keeps its state.
type State struct {
	inFlight atomic.Int64
	ewmaTTFT atomic.Int64 // nanoseconds; 0 until the first success

	mu            sync.Mutex
	fails         []time.Time // failures inside the current window
	cooldownUntil time.Time
	probing       bool // one request is testing a deployment whose cooldown expired
	window        time.Time
	windowReqs    int64
	windowTokens  int64
}

// Snapshot is a deployment's state for /health.
type Snapshot struct {
	Healthy       bool       `json:"healthy"`
	CoolingUntil  *time.Time `json:"cooling_down_until,omitempty"`
	InFlight      int64      `json:"in_flight"`
	RecentTTFTMs  *float64   `json:"recent_ttft_ms,omitempty"`
	RecentFails   int        `json:"recent_failures"`
	RequestsInMin int64      `json:"requests_this_minute"`
}

// Healthy reports whether the deployment is out of cooldown at now.
func (d *State) Healthy(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !now.Before(d.cooldownUntil)
}

// Snapshot reads the state at now.
func (d *State) Snapshot(now time.Time) Snapshot {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := Snapshot{Healthy: !now.Before(d.cooldownUntil), InFlight: d.inFlight.Load(), RecentFails: len(d.fails)}
	if !s.Healthy {
		t := d.cooldownUntil
		s.CoolingUntil = &t
	}
	if v := d.ewmaTTFT.Load(); v > 0 {
		ms := float64(v) / 1e6
		s.RecentTTFTMs = &ms
	}
	if now.Sub(d.window) < time.Minute {
		s.RequestsInMin = d.windowReqs
	}
	return s
}

// Start counts a request in flight on the deployment, until Done.
func (d *State) Start() { d.inFlight.Add(1) }

// Done ends what Start began.
func (d *State) Done() { d.inFlight.Add(-1) }

// policy is the failure and rate policy of one deployment.
type policy struct {
	allowedFails int
	failWindow   time.Duration
	cooldown     time.Duration
	rpm, tpm     int64
}

// Admission is whether a request may use a deployment now.
type Admission uint8

// The admissions.
const (
	Admitted    Admission = iota
	CoolingDown           // the deployment failed and rests; wait says how long
	RateLimited           // the deployment's rpm/tpm window is full
)

// admit decides whether a request may use the deployment now, counting it
// against the rate window when it may. A deployment whose cooldown has
// expired lets exactly one probe through until that probe reports back;
// probe tells the caller that it holds it.
func (d *State) admit(now time.Time, p policy) (res Admission, wait time.Duration, probe bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.cooldownUntil) {
		return CoolingDown, d.cooldownUntil.Sub(now), false
	}
	if !d.cooldownUntil.IsZero() {
		if d.probing {
			return CoolingDown, time.Second, false
		}
		d.probing, probe = true, true
	}
	if now.Sub(d.window) >= time.Minute {
		d.window, d.windowReqs, d.windowTokens = now.Truncate(time.Minute), 0, 0
	}
	if (p.rpm > 0 && d.windowReqs >= p.rpm) || (p.tpm > 0 && d.windowTokens >= p.tpm) {
		if probe {
			d.probing = false
		}
		return RateLimited, d.window.Add(time.Minute).Sub(now), false
	}
	d.windowReqs++
	return Admitted, 0, probe
}

// Success clears failure state after a good upstream answer.
func (d *State) Success(ttft time.Duration) {
	d.mu.Lock()
	d.fails = d.fails[:0]
	d.cooldownUntil = time.Time{}
	d.probing = false
	d.mu.Unlock()
	if ttft <= 0 {
		return
	}
	// An EWMA with alpha 0.2 follows a changing backend within a few
	// requests without letting one outlier flip the ranking.
	for {
		old := d.ewmaTTFT.Load()
		next := int64(ttft)
		if old > 0 {
			next = old + (int64(ttft)-old)/5
		}
		if d.ewmaTTFT.CompareAndSwap(old, next) {
			return
		}
	}
}

// failure counts a failed attempt and starts a cooldown when the
// deployment failed allowedFails times inside the window, when a probe
// failed, or at once when down is set (the server refused the connection:
// it is not running, and every further request would only repeat that).
// It reports whether a cooldown started.
func (d *State) failure(now time.Time, p policy, down bool) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.cooldown <= 0 {
		d.probing = false
		return false
	}
	if d.probing || down {
		d.probing = false
		d.cooldownUntil = now.Add(p.cooldown)
		d.fails = d.fails[:0]
		return true
	}
	keep := d.fails[:0]
	for _, t := range d.fails {
		if now.Sub(t) < p.failWindow {
			keep = append(keep, t)
		}
	}
	d.fails = append(keep, now)
	if p.allowedFails > 0 && len(d.fails) >= p.allowedFails {
		d.cooldownUntil = now.Add(p.cooldown)
		d.fails = d.fails[:0]
		return true
	}
	return false
}

// Release ends a request that was admitted but never reached the upstream
// or whose outcome says nothing about the deployment's health. Only the
// probe's release frees the probe slot; another request ending must not
// let a second probe start beside the first.
func (d *State) Release(probe bool) {
	if !probe {
		return
	}
	d.mu.Lock()
	d.probing = false
	d.mu.Unlock()
}

// AddTokens counts a finished request's tokens against the tpm window.
func (d *State) AddTokens(n int64) {
	d.mu.Lock()
	d.windowTokens += n
	d.mu.Unlock()
}

// Selector orders one alias's deployments for a request: the routing
// strategy. A new strategy is a new type, not a new case.
type Selector interface {
	// Order returns the deployments in the order to try them; it may
	// return ds itself when there is nothing to order, so callers only
	// read the result.
	Order(ds []*Deployment) []*Deployment
}

// NewSelector is the selector for a routing_strategy, as LiteLLM users
// name them; the weighted shuffle is the default.
func NewSelector(strategy string) Selector {
	switch strategy {
	case modellist.StrategyLeastBusy:
		return leastBusy{}
	case modellist.StrategyLatency:
		return lowestLatency{}
	}
	return weightedShuffle{}
}

// shuffled is a shuffled copy of ds, or ds when there is nothing to order.
func shuffled(ds []*Deployment) []*Deployment {
	if len(ds) < 2 {
		return ds
	}
	out := make([]*Deployment, len(ds))
	copy(out, ds)
	rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

// leastBusy tries the deployment with the fewest requests in flight
// first, ties in random order.
type leastBusy struct{}

func (leastBusy) Order(ds []*Deployment) []*Deployment {
	out := shuffled(ds)
	sort.SliceStable(out, func(i, j int) bool { return out[i].state.inFlight.Load() < out[j].state.inFlight.Load() })
	return out
}

// lowestLatency tries the deployment with the lowest recent time to
// first token first. Unmeasured deployments go first so that every one
// gets measured.
type lowestLatency struct{}

func (lowestLatency) Order(ds []*Deployment) []*Deployment {
	out := shuffled(ds)
	sort.SliceStable(out, func(i, j int) bool { return out[i].state.ewmaTTFT.Load() < out[j].state.ewmaTTFT.Load() })
	return out
}

// weightedShuffle repeatedly draws without replacement in proportion to
// the deployments' weights.
type weightedShuffle struct{}

func (weightedShuffle) Order(ds []*Deployment) []*Deployment {
	if len(ds) < 2 {
		return ds // nothing to order; callers only read it
	}
	out := make([]*Deployment, len(ds))
	copy(out, ds)
	for i := 0; i < len(out)-1; i++ {
		total := 0.0
		for _, d := range out[i:] {
			total += d.dep.Weight
		}
		r := rand.Float64() * total
		pick := len(out) - 1
		for j := i; j < len(out); j++ {
			r -= out[j].dep.Weight
			if r < 0 {
				pick = j
				break
			}
		}
		out[i], out[pick] = out[pick], out[i]
	}
	return out
}
