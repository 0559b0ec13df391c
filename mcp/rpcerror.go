package mcp

import (
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Every error the gateway answers a client with itself carries a JSON-RPC
// code: the SDK sends a plain Go error with code 0, which is no JSON-RPC
// code and which clients show as "MCP error 0". The codes:
//
//   - -32602 (invalid params) when the request names something this caller
//     does not have: an unknown tool, a tool outside the key's allow-list
//     (it is not in the key's tools/list either, so to the client it is an
//     unknown tool, the case MCP gives -32602), a prompt or resource of a
//     server the key may not use or that is not configured, a missing
//     argument.
//   - -32603 (internal error) when the request was fine and the upstream
//     server failed it: down, too slow, or a broken answer.
//   - -32000 (the first of JSON-RPC's implementation-defined server
//     errors) when a rate limit refused the call: the request is valid and
//     the server healthy, and the same call may succeed later.
//
// An upstream's own JSON-RPC error keeps its code and message.
const codeLimited = -32000

// rpcError is a JSON-RPC error with code and a formatted message.
func rpcError(code int64, format string, args ...any) error {
	return &jsonrpc.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// upstreamError names the server (prefix) in err: an upstream's JSON-RPC
// error keeps its code, any other failure is -32603.
func upstreamError(prefix string, err error) error {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		return &jsonrpc.Error{Code: we.Code, Message: prefix + ": " + we.Message, Data: we.Data}
	}
	return rpcError(jsonrpc.CodeInternalError, "%s: %v", prefix, err)
}
