// Package adminapi is the wire shape of the gateway's admin API for keys
// and workspaces: Anthropic's Admin API objects and lists, with the
// gateway's extensions (a key's models and secret; every object's budgets
// and rates). The server (handlers/admin) writes these types and the
// client (admincli) reads them, so the two cannot drift apart; it holds
// types only, and imports nothing.
package adminapi

// Paths of the keys and workspaces calls.
const (
	KeysPath       = "/v1/organizations/api_keys"
	WorkspacesPath = "/v1/organizations/workspaces"
)

// Key is an API key.
type Key struct {
	ID             string    `json:"id"`
	Type           string    `json:"type"`
	Name           string    `json:"name"`
	WorkspaceID    *string   `json:"workspace_id"`
	CreatedAt      *string   `json:"created_at"`
	CreatedBy      CreatedBy `json:"created_by"`
	PartialKeyHint *string   `json:"partial_key_hint"`
	Status         string    `json:"status"`
	ExpiresAt      *string   `json:"expires_at"`
	Models         []string  `json:"models"`
	Budget         *Budget   `json:"budget"`
	SoftBudget     *string   `json:"soft_budget"`
	SessionBudget  *string   `json:"session_budget"`
	RPM            *int64    `json:"rpm"`
	TPM            *int64    `json:"tpm"`
	MaxParallel    *int64    `json:"max_parallel"`
	// MCP is the MCP allow-list ("server" or "server/tool"); absent
	// allows every MCP server.
	MCP []string `json:"mcp,omitempty"`
	MCPOptions
	// Value is the secret, in the answer to a create only.
	Value string `json:"value,omitempty"`
}

// CreatedBy names who made an object: the Caddyfile ("config") or the
// admin API ("admin_api").
type CreatedBy struct {
	ID   string `json:"id"`
	Type string `json:"type"`
	// Email and Subject name the person behind an "oidc" key.
	Email   string `json:"email,omitempty"`
	Subject string `json:"subject,omitempty"`
}

// Budget is a hard budget: an amount in cents (a decimal string) per
// period (daily, weekly, monthly or total).
type Budget struct {
	Amount string `json:"amount"`
	Period string `json:"period"`
}

// Workspace is a workspace.
type Workspace struct {
	ID            string    `json:"id"`
	Type          string    `json:"type"`
	Name          string    `json:"name"`
	CreatedAt     *string   `json:"created_at"`
	ArchivedAt    *string   `json:"archived_at"`
	CreatedBy     CreatedBy `json:"created_by"`
	Budget        *Budget   `json:"budget"`
	SoftBudget    *string   `json:"soft_budget"`
	SessionBudget *string   `json:"session_budget"`
	RPM           *int64    `json:"rpm"`
	TPM           *int64    `json:"tpm"`
	MaxParallel   *int64    `json:"max_parallel"`
	// MCP is the workspace's MCP allow-list; absent allows every server.
	MCP []string `json:"mcp,omitempty"`
	MCPOptions
	// CountAgentReported: costs its keys' coding agents report (POST
	// /v1/logs) count against budgets, bounded by list price; false:
	// reports only.
	CountAgentReported bool `json:"count_agent_reported"`
}

// Page is one page of a list, in list order; a client asks for the next
// with after_id=LastID while HasMore.
type Page[T any] struct {
	Data    []T     `json:"data"`
	FirstID *string `json:"first_id"`
	LastID  *string `json:"last_id"`
	HasMore bool    `json:"has_more"`
}

// PersonKey is the answer of /auth/oidc/token: a short-lived key minted
// for a person signed in with the identity provider, and the refresh
// token that renews it (`caddy modelgate login` keeps both).
type PersonKey struct {
	Key          string   `json:"key"`
	KeyID        string   `json:"key_id"`
	ExpiresAt    string   `json:"expires_at"` // RFC 3339
	RefreshToken string   `json:"refresh_token,omitempty"`
	ID           string   `json:"id"`
	Email        string   `json:"email,omitempty"`
	Subject      string   `json:"subject"`
	Groups       []string `json:"groups"`
	Role         string   `json:"role"`
	WorkspaceID  string   `json:"workspace_id,omitempty"`
	Models       []string `json:"models"`
}

// MCPOptions are a key's or workspace's MCP gateway settings besides its
// allow-list.
type MCPOptions struct {
	// MCPApproval lists servers or server/tool entries whose calls wait
	// for a person's approval.
	MCPApproval []string `json:"mcp_approval,omitempty"`
	// MCPToolSearch: tools/list offers a search tool and a call tool
	// instead of every tool.
	MCPToolSearch bool `json:"mcp_tool_search,omitempty"`
}
