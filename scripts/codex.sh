#!/bin/sh
# Installs the Codex CLI (npm @openai/codex, pinned) under .cache and prints
# the path of its `codex` executable on the last stdout line.
set -eu
version=0.171.0
exec sh "$(dirname "$0")/npm-tool.sh" "codex-$version" "@openai/codex@$version" codex
