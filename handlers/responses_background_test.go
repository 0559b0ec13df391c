package handlers

import "testing"

// TestBGRunsPerKey: a key runs at most max background responses at once;
// a finished one frees its slot, other keys are counted apart, and a run
// is found only under its own key.
func TestBGRunsPerKey(t *testing.T) {
	b := newBGRuns()
	runs := []*bgRun{{id: "r1", key: "a"}, {id: "r2", key: "a"}, {id: "r3", key: "a"}}
	if !b.start(runs[0], 2) || !b.start(runs[1], 2) {
		t.Fatal("two runs under a limit of two refused")
	}
	if b.start(runs[2], 2) {
		t.Fatal("a third run under a limit of two started")
	}
	if !b.start(&bgRun{id: "r4", key: "b"}, 2) {
		t.Fatal("another key's run refused")
	}
	if b.get("b", "r1") != nil || b.get("a", "r1") != runs[0] {
		t.Fatal("runs are not scoped to their key")
	}
	b.finish(runs[0])
	if b.get("a", "r1") != nil || !b.start(runs[2], 2) {
		t.Fatal("a finished run kept its slot")
	}
	b.finish(runs[1])
	b.finish(runs[2])
	if len(b.perKey) != 1 || len(b.runs) != 1 {
		t.Fatalf("finished keys left behind: %v %v", b.perKey, b.runs)
	}
}
