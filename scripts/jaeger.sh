#!/usr/bin/env bash
# Installs Jaeger v1.76.0 (its all-in-one `jaeger` binary, OpenTelemetry
# Collector based) for the OpenTelemetry integration tests and prints its
# path as the last line of stdout:
#
#   export MODELGATE_TEST_JAEGER=$(scripts/jaeger.sh | tail -n1)
#
# Jaeger's go.mod has a replace directive, which `go install pkg@version`
# refuses, so it is built from the pinned module in tools/jaeger. The
# tests start it themselves on free loopback ports.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=$ROOT/.cache/bin
mkdir -p "$BIN"
if [ ! -x "$BIN/jaeger" ] || ! "$BIN/jaeger" version 2>/dev/null | grep -q 'v1.76.0\|v2.13'; then
	echo "jaeger.sh: building Jaeger v1.76.0 (a few minutes on 2 cores)" >&2
	(cd "$ROOT/tools/jaeger" && CGO_ENABLED=0 GOBIN="$BIN" go install github.com/jaegertracing/jaeger/cmd/jaeger) >&2
fi
echo "$BIN/jaeger"
