package testlane

import "testing"

// TestFullOnlyFollowsTheLane: under -short (the quick lane) FullOnly skips
// the test; without it, the test runs.
func TestFullOnlyFollowsTheLane(t *testing.T) {
	ranOn := false
	t.Run("needs", func(t *testing.T) {
		FullOnly(t, "something the quick lane lacks")
		ranOn = true
	})
	if skipped := !ranOn; skipped != testing.Short() {
		t.Errorf("FullOnly skipped=%v with -short=%v", skipped, testing.Short())
	}
}
