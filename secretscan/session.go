package secretscan

import (
	"crypto/sha256"
	"encoding/hex"
)

// SessionID screens a session id, which is the client's text (a header,
// metadata.user_id) and may be a credential pasted in the wrong place:
// the gateway keeps it in the ledger, the breaker's chat line and resume
// link and the reports, and sends it nowhere upstream. A session id
// that is a secret becomes "redacted-<rule>-<16 hex>", a stand-in as
// stable as the id itself (a hash, so the session's turns still group
// together) that never holds the value; with the detection. Any other
// id is returned as it is, at the cost of one scan of a short string.
func (f *Firewall) SessionID(id string) (string, *Detection) {
	if len(id) < minSecret {
		return id, nil
	}
	s := f.rules.getScratch()
	hits := f.rules.scan(id, s)
	rule := ""
	if len(hits) > 0 {
		rule = hits[0].Rule
	}
	f.rules.putScratch(s)
	if rule == "" {
		return id, nil
	}
	sum := sha256.Sum256([]byte(id))
	return "redacted-" + rule + "-" + hex.EncodeToString(sum[:8]), &Detection{Rule: rule, Location: Location{Path: "session id", Message: -1}}
}
