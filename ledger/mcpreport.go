package ledger

import (
	"cmp"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// MCPReportPage is the JSON body of GET /v1/organizations/usage_report/mcp:
// the MCP gateway's tool calls per time bucket, shaped and paged like the
// messages usage report.
type MCPReportPage struct {
	Data     []MCPBucket `json:"data"`
	HasMore  bool        `json:"has_more"`
	NextPage *string     `json:"next_page"`
}

// MCPBucket is one time bucket; Results is [] when no tool was called.
type MCPBucket struct {
	StartingAt string      `json:"starting_at"`
	EndingAt   string      `json:"ending_at"`
	Results    []MCPResult `json:"results"`
}

// MCPResult is one group's tool calls. Dimension fields are null unless
// the query grouped by them. Errors counts calls the gateway or the server
// failed; Refused those an allow-list, a rate limit or a missing approval
// stopped; Bytes is what the calls carried, arguments and results. Of the
// calls that needed a person's approval (require_approval), Approved ran
// with one, ApprovalDenied were denied and ApprovalExpired nobody decided
// in time (both also in Refused).
type MCPResult struct {
	Calls           int64   `json:"calls"`
	Errors          int64   `json:"errors"`
	Refused         int64   `json:"refused"`
	Approved        int64   `json:"approved"`
	ApprovalDenied  int64   `json:"approval_denied"`
	ApprovalExpired int64   `json:"approval_expired"`
	DurationMs      int64   `json:"duration_ms"`
	Bytes           int64   `json:"bytes"`
	Server          *string `json:"server"`
	Tool            *string `json:"tool"`
	APIKeyID        *string `json:"api_key_id"`
	WorkspaceID     *string `json:"workspace_id"`
}

func mcpGroups() []string { return []string{"server", "tool", "api_key_id", "workspace_id"} }

// ParseMCPQuery validates the query of GET
// /v1/organizations/usage_report/mcp: the messages report's time, paging
// and key and workspace filters, grouped by server, tool, api_key_id and
// workspace_id.
func ParseMCPQuery(v url.Values, now time.Time) (ReportQuery, error) {
	return parseBucketed(v, now, mcpGroups())
}

type mcpKey struct{ server, tool, key, workspace optString }

// MCPReport answers one page of the MCP report from the store's endpoint
// mcp records. A tool call record carries the server as Provider and the
// tool as UpstreamModel; it has no tokens, so the token and cost reports
// never show it.
func MCPReport(ctx context.Context, s Store, q ReportQuery) (*MCPReportPage, error) {
	p := q.page()
	out := &MCPReportPage{Data: make([]MCPBucket, p.n), HasMore: p.next != nil, NextPage: p.next}
	if p.n == 0 {
		return out, nil
	}
	recs, err := s.Query(ctx, Filter{From: p.start, To: p.end, APIKeyIDs: q.APIKeyIDs, WorkspaceIDs: q.WorkspaceIDs})
	if err != nil {
		return nil, err
	}
	groups := make([]map[mcpKey]*MCPResult, p.n)
	gServer, gTool, gKey, gWS := q.grouped("server"), q.grouped("tool"), q.grouped("api_key_id"), q.grouped("workspace_id")
	for i := range recs {
		r := &recs[i]
		if r.Endpoint != EndpointMCP {
			continue
		}
		b := bucketIndex(r.Time.Truncate(q.Width), p.start, q.Width, p.n)
		if b < 0 {
			continue
		}
		k := mcpKey{opt(gServer, r.Provider), opt(gTool, r.UpstreamModel), opt(gKey, r.KeyID), opt(gWS, r.Workspace)}
		if groups[b] == nil {
			groups[b] = make(map[mcpKey]*MCPResult)
		}
		res := groups[b][k]
		if res == nil {
			res = &MCPResult{Server: k.server.ptr(), Tool: k.tool.ptr(), APIKeyID: k.key.ptr(), WorkspaceID: k.workspace.ptr()}
			groups[b][k] = res
		}
		res.Calls++
		switch r.Outcome {
		case OutcomeError, OutcomeCancelled:
			res.Errors++
		case OutcomeRefused:
			res.Refused++
		}
		countApproval(res, r)
		addSat(&res.DurationMs, r.Latency.Milliseconds())
		addSat(&res.Bytes, r.Bytes)
	}
	for i := range out.Data {
		bs := p.start.Add(time.Duration(i) * q.Width)
		out.Data[i] = MCPBucket{StartingAt: formatTime(bs), EndingAt: formatTime(bs.Add(q.Width)), Results: make([]MCPResult, 0, len(groups[i]))}
		keys := make([]mcpKey, 0, len(groups[i]))
		for k := range groups[i] {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b mcpKey) int {
			return cmp.Or(a.server.compare(b.server), a.tool.compare(b.tool), a.key.compare(b.key), a.workspace.compare(b.workspace))
		})
		for _, k := range keys {
			out.Data[i].Results = append(out.Data[i].Results, *groups[i][k])
		}
	}
	return out, nil
}

// countApproval counts a call that needed an approval: the MCP gateway
// records the approval's id (apr_…) as the call's request id, and the
// status tells denied (403) and expired (408) from approved.
func countApproval(res *MCPResult, r *Record) {
	if !strings.HasPrefix(r.RequestID, "apr_") {
		return
	}
	switch {
	case r.Outcome != OutcomeRefused:
		res.Approved++
	case r.Status == http.StatusForbidden:
		res.ApprovalDenied++
	case r.Status == http.StatusRequestTimeout:
		res.ApprovalExpired++
	}
}
