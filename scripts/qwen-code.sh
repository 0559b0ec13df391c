#!/bin/sh
# Installs Qwen Code (npm @qwen-code/qwen-code, pinned) into
# .cache/qwen-<version> under the repository root, once, and prints the
# absolute path of the `qwen` executable on the last stdout line. Its
# end-to-end test uses it; scripts/compat.sh installs the latest instead.
set -eu
version=0.24.4
exec sh "$(dirname "$0")/npm-tool.sh" "qwen-$version" "@qwen-code/qwen-code@$version" qwen
