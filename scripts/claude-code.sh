#!/bin/sh
# Installs Claude Code (the npm package @anthropic-ai/claude-code) into
# .cache/claude-code under the repository root, once, and prints the absolute
# path of the `claude` executable on the last stdout line. The agent-hook
# end-to-end test and the lead's test command use it; the cache directory is
# gitignored so nothing lands in the tree.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/claude-code"
bin="$dir/node_modules/.bin/claude"

if [ ! -x "$bin" ]; then
	command -v npm >/dev/null 2>&1 || { echo "claude-code.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	# A private package.json keeps npm from walking up into some other
	# project's node_modules; progress output goes to stderr so the last
	# stdout line stays the path.
	[ -f "$dir/package.json" ] || printf '{"name":"modelgate-claude-code","private":true}\n' >"$dir/package.json"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error @anthropic-ai/claude-code >&2
fi

[ -x "$bin" ] || { echo "claude-code.sh: $bin missing after install" >&2; exit 1; }
echo "$bin"
