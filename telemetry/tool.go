package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// ToolCall is the span of one MCP tool call. A nil *ToolCall does nothing.
type ToolCall struct{ span trace.Span }

// StartToolCall starts the span of an MCP tool call ("execute_tool
// <tool>") under the span in ctx, for the MCP gateway: server is the
// upstream MCP server's name, tool the tool's. Like requests, it does
// nothing when that span is not recording.
func StartToolCall(ctx context.Context, server, tool string) (context.Context, *ToolCall) {
	parent := trace.SpanFromContext(ctx)
	if !parent.IsRecording() {
		return ctx, nil
	}
	ctx, span := parent.TracerProvider().Tracer(scope).Start(ctx, "execute_tool "+tool,
		trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(
			attribute.String("gen_ai.operation.name", "execute_tool"),
			attribute.String("gen_ai.tool.name", tool),
			// The MCP conventions' method name: the gateway spans tool
			// calls only.
			attribute.String("mcp.method.name", "tools/call"),
			attribute.String("modelgate.mcp.server", server),
		))
	return ctx, &ToolCall{span: span}
}

// End ends the tool call; errClass is "" when it succeeded, else a short
// class such as "timeout" or "tool_error" (never the tool's output).
func (t *ToolCall) End(errClass string) {
	if t == nil {
		return
	}
	if errClass != "" {
		t.span.SetAttributes(attribute.String("error.type", errClass))
		t.span.SetStatus(codes.Error, errClass)
	}
	t.span.End()
}
