#!/bin/sh
# Installs the official Node SDKs (npm openai, @anthropic-ai/sdk,
# @google/genai and @aws-sdk/client-bedrock-runtime, with LangChain's
# @langchain/aws on the last, pinned) into
# .cache/node-sdks under the repository root, once, and prints that
# directory on the last stdout line. Their end-to-end tests run
# integration/testdata/node_sdks.mjs and bedrock_converse.mjs there;
# scripts/compat.sh installs the latest instead (NODE_SDKS_PACKAGES,
# NODE_SDKS_DIR).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
dir=${NODE_SDKS_DIR:-"$root/.cache/node-sdks"}
pkgs=${NODE_SDKS_PACKAGES:-"openai@7.57.0 @anthropic-ai/sdk@1.14.0 @google/genai@3.3.0 @aws-sdk/client-bedrock-runtime@3.1164.0 @langchain/aws@1.4.5 @langchain/core@1.4.0"}

if [ ! -f "$dir/.installed" ] || [ "$(cat "$dir/.installed")" != "$pkgs" ]; then
	command -v npm >/dev/null 2>&1 || { echo "node-sdks.sh: npm not found" >&2; exit 1; }
	mkdir -p "$dir"
	printf '{"name":"modelgate-node-sdks","private":true,"type":"module"}\n' >"$dir/package.json"
	# shellcheck disable=SC2086 # the package list is meant to split
	npm install --prefix "$dir" --no-audit --no-fund --loglevel=error $pkgs >&2
	echo "$pkgs" >"$dir/.installed"
fi
echo "$dir"
