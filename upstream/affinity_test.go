package upstream

import (
	"testing"
	"time"

	"github.com/modelgate/modelgate/modellist"
)

// The table forgets a pin after its TTL and drops the least recently used
// session past its bound.
func TestAffinityBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAffinity(2, time.Hour)
	a.Set("s1", "d1", t0)
	a.Set("s2", "d2", t0.Add(time.Minute))
	if d, ok := a.Get("s1", t0.Add(2*time.Minute)); !ok || d != "d1" {
		t.Fatalf("s1 = %q %v, want d1", d, ok)
	}
	// s1 was used last, so s2 is the one a third session pushes out.
	a.Set("s3", "d3", t0.Add(3*time.Minute))
	if _, ok := a.Get("s2", t0.Add(3*time.Minute)); ok {
		t.Errorf("s2 survived past the bound of 2")
	}
	if a.Len() != 2 {
		t.Errorf("Len = %d, want 2", a.Len())
	}
	if _, ok := a.Get("s3", t0.Add(3*time.Minute+time.Hour+time.Second)); ok {
		t.Errorf("s3 survived its TTL")
	}
	// Moving a pin keeps one entry.
	a.Set("s1", "d9", t0.Add(4*time.Minute))
	if d, _ := a.Get("s1", t0.Add(4*time.Minute)); d != "d9" {
		t.Errorf("s1 = %q after a move, want d9", d)
	}
	if AffinityKey("k", "a", "s") == AffinityKey("k", "a\x00s", "") {
		t.Errorf("keys of different sessions collide")
	}
}

// PinFirst moves the pinned deployment to the front without touching the
// selector's slice.
func TestPinFirst(t *testing.T) {
	ds := []*Deployment{{dep: &modellist.Deployment{ID: "a"}}, {dep: &modellist.Deployment{ID: "b"}}, {dep: &modellist.Deployment{ID: "c"}}}
	out := PinFirst(ds, "c")
	if out[0].dep.ID != "c" || out[1].dep.ID != "a" || out[2].dep.ID != "b" {
		t.Errorf("order %s%s%s, want cab", out[0].dep.ID, out[1].dep.ID, out[2].dep.ID)
	}
	if ds[0].dep.ID != "a" || ds[2].dep.ID != "c" {
		t.Errorf("the input slice was modified")
	}
	if got := PinFirst(ds, "gone"); &got[0] != &ds[0] {
		t.Errorf("an unknown pin must leave the order as it is")
	}
}
