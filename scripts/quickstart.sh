#!/usr/bin/env bash
# The README's quick start: builds the gateway and serves models.example.yaml
# on http://localhost:4000, offline. The `echo` alias answers at once; the
# local aliases answer when their servers run; the cloud aliases need real
# keys exported before you start (offline they fail fast with 502).
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache/bin
CGO_ENABLED=0 go build -trimpath -o .cache/bin/caddy ./cmd/caddy
export PROXY_KEY="${PROXY_KEY:-sk-modelgate-quickstart}"
# The example file names these; placeholders let it load without them.
export ANTHROPIC_API_KEY="${ANTHROPIC_API_KEY:-not-set}"
export OPENAI_API_KEY="${OPENAI_API_KEY:-not-set}"
export GROQ_API_KEY="${GROQ_API_KEY:-not-set}"
export XDG_DATA_HOME="${XDG_DATA_HOME:-$PWD/.cache/data}"
exec .cache/bin/caddy gateway --config models.example.yaml --listen "${LISTEN:-localhost:4000}"
