#!/bin/sh
# Installs one pinned npm package into .cache/<dir> under the repository
# root, once, and prints the absolute path of its executable on the last
# stdout line: scripts/npm-tool.sh <dir> <package@version> <bin name>.
# codex.sh and gemini-cli.sh name what the end-to-end tests use; the
# cache directory is gitignored so nothing lands in the tree.
set -eu

[ $# -eq 3 ] || { echo "usage: npm-tool.sh <dir> <package@version> <bin>" >&2; exit 2; }
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/$1"
bin="$dir/node_modules/.bin/$3"

if [ ! -x "$bin" ]; then
	command -v npm >/dev/null 2>&1 || { echo "npm-tool.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	# A private package.json keeps npm from walking up into another
	# project; progress goes to stderr so the last stdout line is the path.
	[ -f "$dir/package.json" ] || printf '{"name":"modelgate-%s","private":true}\n' "$1" >"$dir/package.json"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "$2" >&2
fi

[ -x "$bin" ] || { echo "npm-tool.sh: $bin missing after install" >&2; exit 1; }
echo "$bin"
