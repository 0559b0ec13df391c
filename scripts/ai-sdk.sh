#!/bin/sh
# Installs the Vercel AI SDK (npm ai, @ai-sdk/openai, @ai-sdk/amazon-bedrock
# and zod, pinned) into .cache/ai-sdk under the repository root, once, and
# prints that directory on the last stdout line. The AI SDK end-to-end
# tests run their script there.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/ai-sdk"
pkgs="ai@7.0.173 @ai-sdk/openai@4.0.118 @ai-sdk/amazon-bedrock@5.0.101 zod@4.6.7"

if [ ! -f "$dir/.installed" ] || [ "$(cat "$dir/.installed")" != "$pkgs" ]; then
	command -v npm >/dev/null 2>&1 || { echo "ai-sdk.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	printf '{"name":"modelgate-ai-sdk","private":true,"type":"module"}\n' >"$dir/package.json"
	# shellcheck disable=SC2086 # the package list is meant to split
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $pkgs >&2
	echo "$pkgs" >"$dir/.installed"
fi
echo "$dir"
