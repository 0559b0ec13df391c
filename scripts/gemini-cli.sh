#!/bin/sh
# Installs Gemini CLI (npm @google/gemini-cli, pinned) into .cache/gemini-<version> under
# the repository root, once, and prints the absolute path of the `gemini`
# executable on the last stdout line. The Gemini CLI end-to-end tests use it; the
# cache directory is gitignored so nothing lands in the tree.
set -eu

version=0.61.0
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/gemini-$version"
bin="$dir/node_modules/.bin/gemini"

if [ ! -x "$bin" ]; then
	command -v npm >/dev/null 2>&1 || { echo "gemini-cli.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	# A private package.json keeps npm from walking up into another
	# project; progress goes to stderr so the last stdout line is the path.
	[ -f "$dir/package.json" ] || printf '{"name":"modelgate-gemini-cli","private":true}\n' >"$dir/package.json"
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error "@google/gemini-cli@$version" >&2
fi

[ -x "$bin" ] || { echo "gemini-cli.sh: $bin missing after install" >&2; exit 1; }
echo "$bin"
