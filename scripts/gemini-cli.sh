#!/bin/sh
# Installs Gemini CLI (npm @google/gemini-cli, pinned) under .cache and
# prints the path of its `gemini` executable on the last stdout line.
set -eu
version=0.61.0
exec sh "$(dirname "$0")/npm-tool.sh" "gemini-$version" "@google/gemini-cli@$version" gemini
