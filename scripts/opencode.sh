#!/bin/sh
# Installs opencode (npm opencode-ai, pinned) into .cache/opencode-<version>
# under the repository root, once, and prints the absolute path of the
# `opencode` executable on the last stdout line. Its end-to-end test uses it;
# scripts/compat.sh installs the latest instead.
set -eu
version=1.18.33
exec sh "$(dirname "$0")/npm-tool.sh" "opencode-$version" "opencode-ai@$version" opencode
