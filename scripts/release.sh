#!/usr/bin/env bash
# Builds a Modelgate release into dist/ (or $1): static binaries for
# linux/amd64, linux/arm64, darwin/arm64 and darwin/amd64, their SHA-256
# checksums (SHA256SUMS) and a CycloneDX SBOM of the binary's modules,
# after govulncheck finds no known vulnerability reachable from the code.
# It then rebuilds every binary from a copy of the source at another path
# with an empty build cache and fails unless the bytes are identical: the
# release can be rebuilt bit for bit by anyone with the same toolchain
# (the one go.mod names) and the same source.
#
#   scripts/release.sh [dist]            # full release
#   MODELGATE_RELEASE_QUICK=1 scripts/release.sh dist
#       # the test command's quick check: linux/amd64 only, rebuilt from
#       # another path with the warm build cache, no govulncheck, no SBOM
#   MODELGATE_RELEASE_NO_VULNCHECK=1 scripts/release.sh
#       # a builder without access to vuln.go.dev: dist/ then holds
#       # VULNCHECK-SKIPPED, and the check must be run elsewhere before
#       # the release is published
#   MODELGATE_RELEASE_PLATFORMS="linux/amd64" narrows the platforms.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
DIST=${1:-dist}
mkdir -p "$DIST" .cache/bin
DIST=$(cd "$DIST" && pwd)
QUICK=${MODELGATE_RELEASE_QUICK:-}
VERSION=$(sed -n 's/^const Version = "\(.*\)"$/\1/p' caddymodule/version.go)
GOVULNCHECK_VERSION=v1.9.0
CYCLONEDX_VERSION=v1.10.0
PLATFORMS=${MODELGATE_RELEASE_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
[ -n "$QUICK" ] && PLATFORMS=linux/amd64

log() { printf 'release.sh: %s\n' "$*" >&2; }

# The toolchain go.mod names; GOTOOLCHAIN makes go fetch it if the local
# one differs, so every builder compiles with the same compiler.
TOOLCHAIN=$(sed -n 's/^toolchain //p' go.mod)
export GOTOOLCHAIN=${TOOLCHAIN:-auto}
export CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
LDFLAGS="-s -w -buildid="
log "Modelgate $VERSION with $(go version | cut -d' ' -f3)"

rm -f "$DIST/VULNCHECK-SKIPPED"
if [ -n "${MODELGATE_RELEASE_NO_VULNCHECK:-}" ] && [ -z "$QUICK" ]; then
	log "WARNING: govulncheck skipped on request; dist/VULNCHECK-SKIPPED says so"
	echo "govulncheck was not run for this build; run scripts/release.sh where vuln.go.dev answers before publishing" >"$DIST/VULNCHECK-SKIPPED"
elif [ -z "$QUICK" ]; then
	GOBIN=$ROOT/.cache/bin go install "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION"
	log "govulncheck ./... (needs https://vuln.go.dev)"
	set +e
	out=$("$ROOT/.cache/bin/govulncheck" ./... 2>&1)
	rc=$?
	set -e
	echo "$out" >&2
	if [ $rc -ne 0 ]; then
		if echo "$out" | grep -qiE 'fetching vulnerabilities|vuln.go.dev|dial tcp|no such host|connection refused|TLS handshake|timeout'; then
			log "govulncheck could not reach the vulnerability database (vuln.go.dev); no release is made without the check"
		else
			log "govulncheck found vulnerabilities reachable from Modelgate's code (above); update the modules it names"
		fi
		exit 1
	fi
fi

build() { # build <src dir> <out dir> <os/arch>
	local src=$1 out=$2 os=${3%/*} arch=${3#*/}
	(cd "$src" && GOOS=$os GOARCH=$arch go build -ldflags="$LDFLAGS" \
		-o "$out/modelgate_${VERSION}_${os}_${arch}" ./cmd/caddy)
}

rm -f "$DIST"/modelgate_* "$DIST"/SHA256SUMS
for p in $PLATFORMS; do
	log "building $p"
	build "$ROOT" "$DIST" "$p"
done
(cd "$DIST" && sha256sum modelgate_"${VERSION}"_* >SHA256SUMS)
cat "$DIST/SHA256SUMS"

# The rebuild: the committed source copied to another directory (git
# archive: what a clone holds, nothing of this work tree's extra files);
# a full release also starts from an empty build cache.
CHECK=$(mktemp -d)
trap 'chmod -R u+w "$CHECK" 2>/dev/null; rm -rf "$CHECK"' EXIT
if git rev-parse --git-dir >/dev/null 2>&1 && [ -z "$(git status --porcelain -- . ':!dist' ':!.cache' 2>/dev/null)" ]; then
	git archive HEAD | tar -x -C "$CHECK" --one-top-level=src
else
	log "the work tree has uncommitted changes: rebuilding from a copy of the files as they are"
	mkdir -p "$CHECK/src"
	tar -c --exclude=./.cache --exclude=./dist --exclude=./.git . | tar -x -C "$CHECK/src"
fi
mkdir -p "$CHECK/out"
if [ -z "$QUICK" ]; then
	export GOCACHE=$CHECK/gocache
fi
for p in $PLATFORMS; do
	log "rebuilding $p from $CHECK/src"
	build "$CHECK/src" "$CHECK/out" "$p"
done
(cd "$CHECK/out" && sha256sum -c "$DIST/SHA256SUMS") >&2 || {
	log "NOT REPRODUCIBLE: the rebuild's bytes differ from dist/"
	exit 1
}
log "reproducible: the rebuild from another path matches SHA256SUMS byte for byte"

if [ -z "$QUICK" ]; then
	GOBIN=$ROOT/.cache/bin go install "github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_VERSION"
	# cyclonedx-gomod names the main module's version from the git tag on
	# HEAD (and cannot read a git worktree): the rebuilt copy gets a
	# one-commit repository tagged with the version the binary reports.
	(cd "$CHECK/src" && git init -q && git add -A &&
		git -c user.name=release -c user.email=release@localhost commit -qm "Modelgate $VERSION" &&
		git tag "$VERSION" &&
		"$ROOT/.cache/bin/cyclonedx-gomod" app -json -licenses=false -main cmd/caddy \
			-output "$DIST/modelgate_${VERSION}.cdx.json" .)
	(cd "$DIST" && sha256sum "modelgate_${VERSION}.cdx.json" >>SHA256SUMS)
	log "SBOM: $DIST/modelgate_${VERSION}.cdx.json (CycloneDX)"
fi
echo "$DIST"
