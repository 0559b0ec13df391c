// Package mcp is the MCP gateway: it holds one client session to each
// upstream MCP server of the models file's mcp_servers (Streamable HTTP,
// SSE, or a stdio process it starts and restarts), and serves them over
// Streamable HTTP to the gateway's keys, all servers aggregated at /mcp
// with tools named <server>-<tool>, or one server unprefixed at
// /mcp/<server>. Upstream credentials stay here: headers and env go only to
// the upstream, never to a client or a log.
package mcp
