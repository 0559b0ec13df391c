package adminapi

// The Spend Limits API in Anthropic's shapes (docs/spend-limits-api.md),
// with the gateway's extensions marked.

// Paths of the spend limits calls.
const (
	SpendLimitsPath      = "/v1/organizations/spend_limits"
	EffectiveLimitsPath  = "/v1/organizations/spend_limits/effective"
	IncreaseRequestsPath = "/v1/organizations/spend_limit_increase_requests"
	// SpendLimitReadsBeta is the anthropic-beta value listing spend
	// limits needs.
	SpendLimitReadsBeta = "spend-limit-reads-2026-09-26"
)

// SpendScope is what a limit applies to: a tagged union on Type.
type SpendScope struct {
	Type        string `json:"type"`
	UserID      string `json:"user_id,omitempty"`
	RBACGroupID string `json:"rbac_group_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	// APIKeyID (type "api_key") and Shared (type "rbac_group": one pool
	// for the group's members together, not each member's default) are
	// the gateway's extensions.
	APIKeyID string `json:"api_key_id,omitempty"`
	Shared   bool   `json:"shared,omitempty"`
	// SessionID (type "session", the gateway's extension: a coding-agent
	// session's cap) names one session; a session scope with UserID or
	// RBACGroupID caps each session of that person or group's members,
	// with none each session of everyone.
	SessionID string `json:"session_id,omitempty"`
}

// AtCap is what happens past a limit (extension): "refuse", or
// "downgrade" to Alias.
type AtCap struct {
	Action string `json:"action"`
	Alias  string `json:"alias,omitempty"`
	// MaxPrice and Allowance let Alias be a priced alias: every
	// deployment of its chain, fallbacks included, costs at most MaxPrice,
	// and the requests sent to it past the cap spend at most Allowance
	// (cents as a decimal string) in the limit's period.
	MaxPrice  *PricePerMillion `json:"max_price,omitempty"`
	Allowance string           `json:"allowance,omitempty"`
}

// PricePerMillion is a price in cents per million tokens, each a decimal
// string ("15" is $0.15, "7.5" is $0.075).
type PricePerMillion struct {
	Input  string `json:"input"`
	Output string `json:"output"`
}

// SpendLimit is a configured spend limit.
type SpendLimit struct {
	ID        string     `json:"id"`
	Type      string     `json:"type"` // spend_limit
	Amount    *string    `json:"amount"`
	Currency  string     `json:"currency"`
	IsEnabled bool       `json:"is_enabled"`
	Period    string     `json:"period"`
	Scope     SpendScope `json:"scope"`
	CreatedAt string     `json:"created_at"`
	UpdatedAt string     `json:"updated_at"`
	AtCap     *AtCap     `json:"at_cap,omitempty"`
}

// SetSpendLimit is the body of POST /v1/organizations/spend_limits.
type SetSpendLimit struct {
	Amount *string    `json:"amount"`
	Scope  SpendScope `json:"scope"`
	Period string     `json:"period,omitempty"`
	AtCap  *AtCap     `json:"at_cap,omitempty"`
}

// Actor is who a row or request is about, or who resolved it.
type Actor struct {
	Type           string  `json:"type"` // user_actor | scoped_api_key_actor
	UserID         string  `json:"user_id,omitempty"`
	EmailAddress   *string `json:"email_address,omitempty"`
	Name           *string `json:"name,omitempty"`
	Deleted        *bool   `json:"deleted,omitempty"`
	ScopedAPIKeyID string  `json:"scoped_api_key_id,omitempty"`
}

// SpendSummary is one row of the effective report: a member's binding
// limit in one period.
type SpendSummary struct {
	Actor             Actor      `json:"actor"`
	Amount            *string    `json:"amount"`
	Currency          string     `json:"currency"`
	Period            string     `json:"period"`
	PeriodToDateSpend string     `json:"period_to_date_spend"`
	Scope             SpendScope `json:"scope"`
	Source            SpendScope `json:"source"`
	SpendLimitID      string     `json:"spend_limit_id"`
	// Remaining and ResetsAt are extensions: what the binding limit
	// leaves (cents, up to 3 decimals) and when the period ends.
	Remaining string `json:"remaining"`
	ResetsAt  string `json:"resets_at"`
	// SessionLimit (extension) is the cap on each of the member's
	// coding-agent sessions, when a session-scoped limit applies to them.
	SessionLimit *SessionLimit `json:"session_limit,omitempty"`
}

// SessionLimit is the session-scoped limit that caps each session of a
// member: its amount (cents), where it was set and its id.
type SessionLimit struct {
	Amount       string     `json:"amount"`
	Source       SpendScope `json:"source"`
	SpendLimitID string     `json:"spend_limit_id"`
}

// IncreaseRequest is a spend limit increase request.
type IncreaseRequest struct {
	ID           string        `json:"id"`
	Type         string        `json:"type"` // spend_limit_increase_request
	Actor        Actor         `json:"actor"`
	CreatedAt    string        `json:"created_at"`
	Period       string        `json:"period"`
	ResolvedAt   *string       `json:"resolved_at"`
	ResolvedBy   *Actor        `json:"resolved_by"`
	SpendSummary *SpendSummary `json:"spend_summary"`
	Status       string        `json:"status"`
	// SpendLimit is set by an approval's answer.
	SpendLimit *SpendLimit `json:"spend_limit,omitempty"`
	// RequestedAmount (cents) and Reason are extensions: what the person
	// asked for, and why.
	RequestedAmount string `json:"requested_amount"`
	Reason          string `json:"reason"`
}

// CreateIncreaseRequest is the body of POST
// /v1/organizations/spend_limit_increase_requests (extension: Anthropic's
// people ask in its own app). Amount is the limit asked for, in cents.
type CreateIncreaseRequest struct {
	Amount string `json:"amount"`
	Period string `json:"period,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// ApproveIncreaseRequest is the body of POST …/{id}/approve.
type ApproveIncreaseRequest struct {
	Amount               string  `json:"amount"`
	Period               *string `json:"period,omitempty"`
	SuppressNotification bool    `json:"suppress_notification,omitempty"`
}

// SpendLinkDecision is the body the approvers' link page POSTs to its
// link (/ui/spend-requests/{id}), with the approver's credentials.
type SpendLinkDecision struct {
	Token  string `json:"token"`
	Action string `json:"action"` // approve or deny
}

// DenyIncreaseRequest is the body of POST …/{id}/deny.
type DenyIncreaseRequest struct {
	SuppressNotification bool `json:"suppress_notification,omitempty"`
}

// CursorPage is a list answer in the spend limits calls' paging: the next
// page's opaque cursor in next_page, null at the end.
type CursorPage[T any] struct {
	Data     []T     `json:"data"`
	NextPage *string `json:"next_page"`
}
