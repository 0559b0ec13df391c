package admin

import (
	"encoding/json"
	"fmt"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
)

// mcpOptionFields reads a key's or workspace's mcp_approval (a list of
// servers or server/tool entries; null or [] removes it) and
// mcp_tool_search (true or false).
func mcpOptionFields(l *ledger.Limits, req *limitsRequest) string {
	if raw := given(req.MCPApproval); raw != nil {
		const how = `mcp_approval: must be a list of MCP servers or server/tool entries whose calls need a person's approval, e.g. ["prod", "github/merge_pull_request"], or null for none`
		var list []string
		if string(*raw) != "null" && json.Unmarshal(*raw, &list) != nil {
			return how
		}
		for i, e := range list {
			if !mcpEntry.MatchString(e) {
				return fmt.Sprintf("mcp_approval[%d]: %q is not a server or server/tool entry; %s", i, e, how[len("mcp_approval: "):])
			}
		}
		l.MCPApproval = list
		if len(list) == 0 {
			l.MCPApproval = nil
		}
	}
	if raw := given(req.MCPToolSearch); raw != nil {
		var on *bool
		if json.Unmarshal(*raw, &on) != nil {
			return "mcp_tool_search: must be true (tools/list offers a search tool instead of every MCP tool) or false"
		}
		l.MCPToolSearch = on != nil && *on
	}
	return ""
}

// mcpOptions are l's MCP settings as the API shows them.
func mcpOptions(l ledger.Limits) adminapi.MCPOptions {
	return adminapi.MCPOptions{MCPApproval: l.MCPApproval, MCPToolSearch: l.MCPToolSearch}
}
