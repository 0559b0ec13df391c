package upstream

import (
	"testing"
	"time"

	"github.com/modelgate/modelgate/modellist"
)

// Strategies order the deployments by weight, in-flight count or latency.
func TestLoadBalancing(t *testing.T) {
	type dep struct {
		name   string
		weight float64
		st     *State
	}
	first := func(strategy string, deps []dep, n int) map[string]int {
		ds := make([]*Deployment, len(deps))
		for i, d := range deps {
			ds[i] = &Deployment{dep: &modellist.Deployment{Alias: d.name, Weight: d.weight}, state: d.st}
		}
		sel := NewSelector(strategy)
		count := map[string]int{}
		for i := 0; i < n; i++ {
			out := sel.Order(ds)
			count[out[0].dep.Alias]++
			if len(out) != len(deps) {
				t.Fatalf("ordered %d of %d", len(out), len(deps))
			}
		}
		return count
	}
	busy, idle := &State{}, &State{}
	busy.inFlight.Add(3)
	idle.inFlight.Add(1)
	if c := first(modellist.StrategyLeastBusy, []dep{{"busy", 1, busy}, {"idle", 1, idle}}, 50); c["idle"] != 50 {
		t.Errorf("least-busy picked %v", c)
	}
	slow, fast, fresh := &State{}, &State{}, &State{}
	slow.Success(800 * time.Millisecond)
	fast.Success(100 * time.Millisecond)
	if c := first(modellist.StrategyLatency, []dep{{"slow", 1, slow}, {"fast", 1, fast}}, 50); c["fast"] != 50 {
		t.Errorf("latency picked %v", c)
	}
	if c := first(modellist.StrategyLatency, []dep{{"slow", 1, slow}, {"fresh", 1, fresh}}, 50); c["fresh"] != 50 {
		t.Errorf("an unmeasured deployment was not tried first: %v", c)
	}
	// Weighted shuffle: 3:1 weights give the heavy one about 75% of first
	// picks; 4000 draws keep the bounds many standard deviations wide.
	c := first(modellist.StrategySimpleShuffle, []dep{{"heavy", 3, &State{}}, {"light", 1, &State{}}}, 4000)
	if share := float64(c["heavy"]) / 4000; share < 0.70 || share > 0.80 {
		t.Errorf("heavy share %.3f, want about 0.75 (%v)", share, c)
	}
	// EWMA follows a change within a few requests.
	for i := 0; i < 10; i++ {
		slow.Success(100 * time.Millisecond)
	}
	if s := slow.Snapshot(time.Now()); s.RecentTTFTMs == nil || *s.RecentTTFTMs > 200 {
		t.Errorf("ewma did not follow: %v", s.RecentTTFTMs)
	}
}

// Only the probe's own release frees the probe slot.
func TestProbeSlot(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := policy{allowedFails: 1, failWindow: time.Minute, cooldown: 10 * time.Second}
	d := &State{}
	if res, _, probe := d.admit(now, p); res != Admitted || probe {
		t.Fatalf("healthy admit = %v probe %v", res, probe)
	}
	if !d.failure(now, p, false) {
		t.Fatal("one failure with allowed_fails 1 did not start a cooldown")
	}
	if res, wait, _ := d.admit(now.Add(time.Second), p); res != CoolingDown || wait != 9*time.Second {
		t.Fatalf("during cooldown = %v wait %s", res, wait)
	}
	later := now.Add(11 * time.Second)
	res, _, probe := d.admit(later, p)
	if res != Admitted || !probe {
		t.Fatalf("after cooldown = %v probe %v", res, probe)
	}
	d.Release(false) // some older request ending
	if res, _, _ := d.admit(later, p); res != CoolingDown {
		t.Errorf("a second probe was Admitted beside the first")
	}
	d.Release(true)
	if res, _, probe := d.admit(later, p); res != Admitted || !probe {
		t.Errorf("after the probe released its slot: %v probe %v", res, probe)
	}
	// cooldown_time 0 disables cooldowns altogether.
	off := &State{}
	for i := 0; i < 5; i++ {
		if off.failure(now, policy{allowedFails: 1, cooldown: 0}, true) {
			t.Fatal("cooldown started with cooldown_time 0")
		}
	}
}
