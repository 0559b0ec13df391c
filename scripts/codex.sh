#!/bin/sh
# Installs the Codex CLI (npm @openai/codex, pinned) into .cache/codex under
# the repository root, once, and prints the absolute path of the `codex`
# executable on the last stdout line. The Codex end-to-end tests use it; the
# cache directory is gitignored so nothing lands in the tree.
set -eu

version=0.169.0
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/codex-$version"
bin="$dir/node_modules/.bin/codex"

if [ ! -x "$bin" ]; then
	command -v npm >/dev/null 2>&1 || { echo "codex.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	# A private package.json keeps npm from walking up into another
	# project; progress goes to stderr so the last stdout line is the path.
	[ -f "$dir/package.json" ] || printf '{"name":"modelgate-codex","private":true}\n' >"$dir/package.json"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@openai/codex@$version" >&2
fi

[ -x "$bin" ] || { echo "codex.sh: $bin missing after install" >&2; exit 1; }
echo "$bin"
