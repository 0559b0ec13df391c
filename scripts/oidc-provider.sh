#!/bin/sh
# Installs the OpenID provider the identity tests sign in against (npm
# oidc-provider, pinned: a certified provider library nobody here wrote)
# into .cache/oidc-provider under the repository root, once, and prints
# that directory on the last stdout line. The tests run
# integration/testdata/oidc/idp.mjs with it: that script only configures
# the library (two users in two groups, one client, device flow).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.cache/oidc-provider"
pkgs="oidc-provider@9.13.3"

if [ ! -f "$dir/.installed" ] || [ "$(cat "$dir/.installed")" != "$pkgs" ]; then
	command -v npm >/dev/null 2>&1 || { echo "oidc-provider.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	printf '{"name":"modelgate-oidc-provider","private":true,"type":"module"}\n' >"$dir/package.json"
	# shellcheck disable=SC2086 # the package list is meant to split
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $pkgs >&2
	echo "$pkgs" >"$dir/.installed"
fi
echo "$dir"
