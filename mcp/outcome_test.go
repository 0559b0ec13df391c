package mcp

import (
	"net/http"
	"testing"

	"github.com/modelgate/modelgate/ledger"
)

// A tool call's outcome reaches the ledger as answered, refused before the
// server saw it, or failed upstream, with the status reports group by.
func TestOutcomeLedger(t *testing.T) {
	type rec struct {
		outcome ledger.Outcome
		status  int
	}
	ok, refused, failed := rec{ledger.OutcomeOK, http.StatusOK}, rec{ledger.OutcomeRefused, http.StatusForbidden}, rec{ledger.OutcomeError, http.StatusBadGateway}
	for o, want := range map[Outcome]rec{
		OutcomeOK: ok, OutcomeToolError: ok,
		OutcomeDenied: refused, OutcomeLimited: refused,
		OutcomeUnavailable: failed, OutcomeTimeout: failed, OutcomeError: failed,
	} {
		if got, status := o.Ledger(); (rec{got, status}) != want {
			t.Errorf("%s: ledger %s %d, want %s %d", o, got, status, want.outcome, want.status)
		}
	}
}
