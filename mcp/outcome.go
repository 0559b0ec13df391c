package mcp

import (
	"net/http"

	"github.com/modelgate/modelgate/ledger"
)

// Outcome is how a tool call ended, as the metrics, the call's span and
// the debug log name it: finer than the ledger's, which Ledger maps it to.
type Outcome string

// The outcomes a tool call can have.
const (
	OutcomeOK          Outcome = "ok"
	OutcomeToolError   Outcome = "tool_error"  // the tool answered with isError: an answer all the same
	OutcomeDenied      Outcome = "denied"      // the key's allow-list does not have the tool, or no server does
	OutcomeLimited     Outcome = "limited"     // the key's or workspace's rpm refused it
	OutcomeUnavailable Outcome = "unavailable" // the server has no live session
	OutcomeTimeout     Outcome = "timeout"     // the server did not answer within its timeout
	OutcomeError       Outcome = "error"       // the server's session failed the call
	// The call needed a person's approval (require_approval): denied, or
	// not given before the wait ended.
	OutcomeApprovalDenied  Outcome = "approval_denied"
	OutcomeApprovalTimeout Outcome = "approval_timeout"
)

// Ledger is the outcome and HTTP status the ledger records for a call
// that ended with o: answered (a tool's own error included), refused
// before the server saw it, or failed upstream.
func (o Outcome) Ledger() (ledger.Outcome, int) {
	switch o {
	case OutcomeOK, OutcomeToolError:
		return ledger.OutcomeOK, http.StatusOK
	case OutcomeDenied, OutcomeLimited, OutcomeApprovalDenied:
		return ledger.OutcomeRefused, http.StatusForbidden
	case OutcomeApprovalTimeout:
		return ledger.OutcomeRefused, http.StatusRequestTimeout
	}
	return ledger.OutcomeError, http.StatusBadGateway
}
