#!/bin/sh
# Installs the reference MCP servers the MCP gateway's integration tests
# drive (npm, pinned) under .cache and prints, as its last two stdout
# lines, MODELGATE_TEST_MCP_EVERYTHING=<path> and
# MODELGATE_TEST_MCP_FILESYSTEM=<path> (the servers' executables), ready
# for `eval` with an `export ` prefix.
set -eu
version=2026.8.31
here=$(dirname "$0")
everything=$(sh "$here/npm-tool.sh" "mcp-everything-$version" "@modelcontextprotocol/server-everything@$version" mcp-server-everything | tail -n1)
filesystem=$(sh "$here/npm-tool.sh" "mcp-filesystem-$version" "@modelcontextprotocol/server-filesystem@$version" mcp-server-filesystem | tail -n1)
echo "MODELGATE_TEST_MCP_EVERYTHING=$everything"
echo "MODELGATE_TEST_MCP_FILESYSTEM=$filesystem"
