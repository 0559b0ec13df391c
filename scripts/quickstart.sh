#!/usr/bin/env bash
# The README's quick start: builds the gateway and serves models.example.yaml
# on http://localhost:4000, offline. The `echo` alias answers at once; the
# local aliases answer when their servers run; the cloud aliases need real
# keys exported before you start (offline they fail fast with 502).
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own output path: scripts/test.sh builds .cache/bin/caddy and hands it
# to the integration tests, so a quick start run meanwhile must not swap
# that binary under them.
BIN=.cache/quickstart/caddy
mkdir -p "$(dirname "$BIN")"

# go build is silent for minutes on a first run; say what it does and show
# that it is alive.
echo "==> building ./cmd/caddy: Caddy with its standard modules, Modelgate, and the AWS and"
echo "    Google cloud SDKs it links for Bedrock and Vertex AI. A first build downloads the Go"
echo "    modules it needs into Go's module cache (all of the project's, tests included, take"
echo "    about 1.4 GB) and compiles everything: roughly 5-10 minutes on an idle 2-core machine,"
echo "    several times that while other builds share its CPUs. Later builds take seconds."
start=$SECONDS
CGO_ENABLED=0 go build -trimpath -o "$BIN" ./cmd/caddy &
build=$!
# On Ctrl-C the build stops too.
trap 'kill "$build" 2>/dev/null || true' INT TERM
while kill -0 "$build" 2>/dev/null; do
	for _ in $(seq 1 30); do
		sleep 1
		kill -0 "$build" 2>/dev/null || break 2
	done
	echo "    still building ($((SECONDS - start)) s)"
done
wait "$build"
trap - INT TERM
echo "==> built in $((SECONDS - start)) s: $BIN ($("$BIN" version))"

export PROXY_KEY="${PROXY_KEY:-sk-modelgate-quickstart}"
# The example file names these; placeholders let it load without them.
export ANTHROPIC_API_KEY="${ANTHROPIC_API_KEY:-not-set}"
export OPENAI_API_KEY="${OPENAI_API_KEY:-not-set}"
export GROQ_API_KEY="${GROQ_API_KEY:-not-set}"
export XDG_DATA_HOME="${XDG_DATA_HOME:-$PWD/.cache/data}"
echo "==> starting the gateway on ${LISTEN:-localhost:4000} (dashboard at /ui/); Ctrl-C stops it"
exec "$BIN" gateway --config models.example.yaml --listen "${LISTEN:-localhost:4000}"
