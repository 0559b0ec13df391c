package caddymodule

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	zapobserver "go.uber.org/zap/zaptest/observer"
)

// TestMaxConcurrentPerKeyDeprecated: the old name still parses and is
// warned of at provision, naming what to set instead; max_parallel alone
// is no warning.
func TestMaxConcurrentPerKeyDeprecated(t *testing.T) {
	core, logs := zapobserver.New(zapcore.WarnLevel)
	(&Gateway{MaxConcurrentPerKey: 8}).warnDeprecated(zap.New(core))
	if all := logs.All(); len(all) != 1 || !strings.Contains(all[0].Message, "max_parallel") || all[0].ContextMap()["max_concurrent_per_key"] != int64(8) {
		t.Fatalf("warnings: %+v", all)
	}
	core, logs = zapobserver.New(zapcore.WarnLevel)
	(&Gateway{}).warnDeprecated(zap.New(core))
	if logs.Len() != 0 {
		t.Fatalf("a config without the old name warned: %+v", logs.All())
	}
}
