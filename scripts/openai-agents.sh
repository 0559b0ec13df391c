#!/bin/sh
# Installs the OpenAI Agents SDK for JavaScript (npm @openai/agents and zod,
# pinned) into .cache/openai-agents under the repository root, once, and
# prints that directory on the last stdout line. The Conversations
# end-to-end test runs its script there.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/openai-agents"
pkgs="@openai/agents@0.20.0 zod@4.6.7"

if [ ! -f "$dir/.installed" ] || [ "$(cat "$dir/.installed")" != "$pkgs" ]; then
	command -v npm >/dev/null 2>&1 || { echo "openai-agents.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	printf '{"name":"modelgate-openai-agents","private":true,"type":"module"}\n' >"$dir/package.json"
	# shellcheck disable=SC2086 # the package list is meant to split
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $pkgs >&2
	echo "$pkgs" >"$dir/.installed"
fi
echo "$dir"
