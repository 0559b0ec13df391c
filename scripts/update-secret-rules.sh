#!/usr/bin/env bash
# Refreshes the secret firewall's rule set from a gitleaks release:
#   scripts/update-secret-rules.sh v8.30.1
# copies config/gitleaks.toml and the licence from the module (through the
# Go module proxy) into secretscan/, sets secretscan.GitleaksVersion, and
# runs the package's tests, which fail if a rule no longer compiles or a
# kind of the generated corpus is no longer found.
set -euo pipefail
version=${1:?usage: $0 vX.Y.Z}
cd "$(dirname "$0")/.."
dir=$(go mod download -json "github.com/zricethezav/gitleaks/v8@$version" | sed -n 's/.*"Dir": "\(.*\)",/\1/p')
install -m 644 "$dir/config/gitleaks.toml" secretscan/rules_gitleaks.toml
install -m 644 "$dir/LICENSE" secretscan/LICENSE.gitleaks
sed -i "s/^const GitleaksVersion = .*/const GitleaksVersion = \"$version\"/" secretscan/rules.go
CGO_ENABLED=0 go test ./secretscan/...
