package handlers

import (
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DeploymentState is the runtime state of one deployment: in-flight
// requests, latency, failures, cooldown and rate windows. It is keyed by
// the deployment's stable ID so that a config reload which keeps the
// deployment keeps its state.
type DeploymentState struct {
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

// States holds every deployment's state, and every key's count of
// requests in progress, for the life of the process.
type States struct {
	mu   sync.Mutex
	m    map[string]*DeploymentState
	keys map[string]*keySlots
}

// NewStates returns an empty state table.
func NewStates() *States {
	return &States{m: make(map[string]*DeploymentState), keys: make(map[string]*keySlots)}
}

// keySlots counts one key's requests in progress. Entries are dropped when
// the count returns to zero so that a stream of one-off keys cannot grow
// the map.
type keySlots struct{ n int }

// acquireKey takes one of key's max concurrent slots and reports whether
// one was free. Every true result must be paired with releaseKey.
func (s *States) acquireKey(key string, max int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ks, ok := s.keys[key]
	if !ok {
		ks = &keySlots{}
		s.keys[key] = ks
	}
	if ks.n >= max {
		return false
	}
	ks.n++
	return true
}

func (s *States) releaseKey(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ks, ok := s.keys[key]; ok {
		ks.n--
		if ks.n <= 0 {
			delete(s.keys, key)
		}
	}
}

// Get returns the state for id, creating it on first use.
func (s *States) Get(id string) *DeploymentState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[id]
	if !ok {
		st = &DeploymentState{}
		s.m[id] = st
	}
	return st
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

// healthy reports whether the deployment is out of cooldown at now.
func (d *DeploymentState) healthy(now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !now.Before(d.cooldownUntil)
}

// Snapshot reads the state at now.
func (d *DeploymentState) Snapshot(now time.Time) Snapshot {
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

// policy is the failure and rate policy of one deployment.
type policy struct {
	allowedFails int
	failWindow   time.Duration
	cooldown     time.Duration
	rpm, tpm     int64
}

type admitResult uint8

const (
	admitted admitResult = iota
	coolingDown
	rateLimited
)

// admit decides whether a request may use the deployment now, counting it
// against the rate window when it may. A deployment whose cooldown has
// expired lets exactly one probe through until that probe reports back;
// probe tells the caller that it holds it.
func (d *DeploymentState) admit(now time.Time, p policy) (res admitResult, wait time.Duration, probe bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.cooldownUntil) {
		return coolingDown, d.cooldownUntil.Sub(now), false
	}
	if !d.cooldownUntil.IsZero() {
		if d.probing {
			return coolingDown, time.Second, false
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
		return rateLimited, d.window.Add(time.Minute).Sub(now), false
	}
	d.windowReqs++
	return admitted, 0, probe
}

// success clears failure state after a good upstream answer.
func (d *DeploymentState) success(ttft time.Duration) {
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
func (d *DeploymentState) failure(now time.Time, p policy, down bool) bool {
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

// release ends a request that was admitted but never reached the upstream
// or whose outcome says nothing about the deployment's health. Only the
// probe's release frees the probe slot; another request ending must not
// let a second probe start beside the first.
func (d *DeploymentState) release(probe bool) {
	if !probe {
		return
	}
	d.mu.Lock()
	d.probing = false
	d.mu.Unlock()
}

// addTokens counts a finished request's tokens against the tpm window.
func (d *DeploymentState) addTokens(n int64) {
	d.mu.Lock()
	d.windowTokens += n
	d.mu.Unlock()
}

// Routing strategies, as LiteLLM users name them.
const (
	StrategyShuffle   = "simple-shuffle"
	StrategyLeastBusy = "least-busy"
	StrategyLatency   = "latency-based-routing"
)

// orderCandidates returns the deployments in the order to try them.
func orderCandidates[T any](items []T, strategy string, weight func(T) float64, st func(T) *DeploymentState) []T {
	if len(items) < 2 {
		return items // nothing to order; callers only read it
	}
	out := make([]T, len(items))
	copy(out, items)
	switch strategy {
	case StrategyLeastBusy:
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		sort.SliceStable(out, func(i, j int) bool { return st(out[i]).inFlight.Load() < st(out[j]).inFlight.Load() })
	case StrategyLatency:
		rand.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		// Unmeasured deployments go first so that every one gets measured.
		sort.SliceStable(out, func(i, j int) bool { return st(out[i]).ewmaTTFT.Load() < st(out[j]).ewmaTTFT.Load() })
	default:
		// Weighted shuffle: repeatedly draw without replacement in
		// proportion to weight.
		for i := 0; i < len(out)-1; i++ {
			total := 0.0
			for _, it := range out[i:] {
				total += weight(it)
			}
			r := rand.Float64() * total
			pick := len(out) - 1
			for j := i; j < len(out); j++ {
				r -= weight(out[j])
				if r < 0 {
					pick = j
					break
				}
			}
			out[i], out[pick] = out[pick], out[i]
		}
	}
	return out
}
