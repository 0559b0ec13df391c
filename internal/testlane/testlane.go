// Package testlane marks the tests the quick lane leaves to the full test
// command. The quick lane is `go test -short` (what `scripts/test.sh
// --quick` runs): it needs no npm, apt, PostgreSQL or Redis, and a test
// that needs one of them, or runs for many seconds, says so here and is
// skipped there with the reason. The full command runs every test.
package testlane

import (
	"os"
	"testing"
)

// FullOnly skips t in the quick lane; needs says what the test needs that
// the quick lane does not give (an npm client, Chromium, PostgreSQL,
// Redis) or why it is slow, so the skip message tells the reader where
// the test runs.
func FullOnly(t testing.TB, needs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("quick lane (-short) skips this: it needs %s; ./scripts/test.sh runs it", needs)
	}
}

// RedisURL is the test Redis server's URL (MODELGATE_TEST_REDIS, which
// scripts/test.sh sets after starting one with scripts/redis.sh); without
// one, or in the quick lane, the test is skipped, saying why.
func RedisURL(t testing.TB) string {
	t.Helper()
	FullOnly(t, "Redis (MODELGATE_TEST_REDIS)")
	u := os.Getenv("MODELGATE_TEST_REDIS")
	if u == "" {
		t.Skip("MODELGATE_TEST_REDIS unset: run `eval export $(scripts/redis.sh | tail -n1)` to test against Redis")
	}
	return u
}
