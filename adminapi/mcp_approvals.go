package adminapi

// MCPApprovalsPath lists MCP tool-call approvals; MCPApprovalsPath + "/{id}/approve"
// and "/{id}/deny" decide a pending one.
const MCPApprovalsPath = "/v1/organizations/mcp_approvals"

// MCPApproval is an MCP tool call that waits, or waited, for a person's
// approval, and what it is bound to. Its link secret is never shown.
type MCPApproval struct {
	ID        string `json:"id"`
	Type      string `json:"type"` // "mcp_approval"
	CreatedAt string `json:"created_at"`
	ExpiresAt string `json:"expires_at"`
	APIKeyID  string `json:"api_key_id"`
	Person    string `json:"person,omitempty"`
	Workspace string `json:"workspace_id,omitempty"`
	Server    string `json:"server"`
	Tool      string `json:"tool"`
	// Arguments are the call's canonical arguments (cut at 4 KiB), the
	// hash covers them whole.
	Arguments       string `json:"arguments"`
	ArgumentsSHA256 string `json:"arguments_sha256"`
	PolicyVersion   string `json:"policy_version"`
	// State is pending, approved, denied, expired or consumed (approved
	// and run).
	State     string  `json:"state"`
	DecidedBy string  `json:"decided_by,omitempty"`
	Via       string  `json:"via,omitempty"`
	DecidedAt *string `json:"decided_at"`
}

// MCPApprovalList is a page of approvals, newest first.
type MCPApprovalList struct {
	Data []MCPApproval `json:"data"`
}
