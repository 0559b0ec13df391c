#!/usr/bin/env bash
# Installs helm at a pinned version from the Go module proxy into
# .cache/bin (no download from get.helm.sh, no checksum to trust beyond
# go.sum's database) and prints its path as the last line of stdout.
# Idempotent: an installed helm of the right version is reused. The first
# build takes several minutes (helm pulls in client-go).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=v3.22.0
BIN=$PWD/.cache/bin/helm
# go version -m names the module version the binary was built from.
if ! { [ -x "$BIN" ] && go version -m "$BIN" 2>/dev/null | grep -Eq "^[[:space:]]+mod[[:space:]]+helm.sh/helm/v3[[:space:]]+$VERSION[[:space:]]"; }; then
	echo "helm.sh: building helm $VERSION with go install" >&2
	mkdir -p .cache/bin
	CGO_ENABLED=0 GOBIN=$PWD/.cache/bin go install "helm.sh/helm/v3/cmd/helm@$VERSION" >&2
fi
echo "$BIN"
