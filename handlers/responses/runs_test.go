package responses

import "testing"

// TestBGRunsPerKey: a key runs at most max background responses at once;
// a finished one frees its slot, other keys are counted apart, and a run
// is found only under its own key.
func TestBGRunsPerKey(t *testing.T) {
	b := NewRuns()
	runs := []*Run{{ID: "r1", Key: "a"}, {ID: "r2", Key: "a"}, {ID: "r3", Key: "a"}}
	if !b.Start(runs[0], 2) || !b.Start(runs[1], 2) {
		t.Fatal("two runs under a limit of two refused")
	}
	if b.Start(runs[2], 2) {
		t.Fatal("a third run under a limit of two started")
	}
	if !b.Start(&Run{ID: "r4", Key: "b"}, 2) {
		t.Fatal("another key's run refused")
	}
	if b.Get("b", "r1") != nil || b.Get("a", "r1") != runs[0] {
		t.Fatal("runs are not scoped to their key")
	}
	b.Finish(runs[0])
	if b.Get("a", "r1") != nil || !b.Start(runs[2], 2) {
		t.Fatal("a finished run kept its slot")
	}
	b.Finish(runs[1])
	b.Finish(runs[2])
	if len(b.perKey) != 1 || len(b.runs) != 1 {
		t.Fatalf("finished keys left behind: %v %v", b.perKey, b.runs)
	}
}
