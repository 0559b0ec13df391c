package policy

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// KeyPrefix starts every secret the gateway mints, so a leaked one is
// recognisable as a Modelgate key.
const KeyPrefix = "sk-mg-"

// NewKey is what the caller of MintKey decides about a runtime key; the
// rest (id, secret, hint, status, times) is the minter's, the same for
// every key whoever asks for it.
type NewKey struct {
	Name      string
	Workspace string             // a workspace id; "" for none
	CreatedBy *ledger.KeyCreator // nil: the admin API
	ExpiresAt time.Time          // zero: never
	Limits    ledger.Limits
}

// MintKey stores a new active runtime key as n describes it and returns
// the stored key with its secret. The secret is in no stored field (only
// its SHA-256, and a hint of its first and last characters), so this is
// the one time anyone sees it.
func (c *Controls) MintKey(ctx context.Context, n NewKey) (ledger.ControlKey, string, error) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	secret := KeyPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	sum := sha256.Sum256([]byte(secret))
	now := c.Now().UTC()
	k := ledger.ControlKey{ID: "apikey_" + strings.ToLower(rand.Text()), Name: n.Name, WorkspaceID: n.Workspace,
		SecretHash: hex.EncodeToString(sum[:]), Hint: secret[:len(KeyPrefix)+4] + "..." + secret[len(secret)-4:],
		Status: "active", CreatedAt: now, UpdatedAt: now, ExpiresAt: n.ExpiresAt, Limits: n.Limits, CreatedBy: n.CreatedBy}
	if err := c.PutKey(ctx, k); err != nil {
		return ledger.ControlKey{}, "", err
	}
	return k, secret, nil
}
