package policy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// TestMintKey: a minted key is stored active with what the caller decided
// and the minter's id, digest and hint; its secret authenticates at once
// on this instance, appears in no stored field, and is new every time.
func TestMintKey(t *testing.T) {
	for name, open := range controlStores() {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			t0 := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
			c := NewControls(func() time.Time { return t0 })
			if _, _, err := c.MintKey(ctx, NewKey{Name: "early"}); !errors.Is(err, errNoStore) {
				t.Fatalf("a mint before the store is open: %v, want errNoStore", err)
			}
			c.SetStore(open(t))
			if err := c.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if err := c.PutWorkspace(ctx, ledger.ControlWorkspace{ID: "ws1", Name: "ws1", CreatedAt: t0, UpdatedAt: t0}); err != nil {
				t.Fatal(err)
			}
			by := &ledger.KeyCreator{Type: "oidc", ID: "ada@example.com", Email: "ada@example.com", Subject: "sub-1", Issuer: "https://idp.example"}
			n := NewKey{Name: "oidc: ada@example.com", Workspace: "ws1", CreatedBy: by, ExpiresAt: t0.Add(12 * time.Hour),
				Limits: ledger.Limits{Models: []string{"echo"}, RPM: 5}}
			k, secret, err := c.MintKey(ctx, n)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(secret, KeyPrefix) || len(secret) != len(KeyPrefix)+43 {
				t.Errorf("secret %q: want %s and 43 base64url characters", secret, KeyPrefix)
			}
			if !strings.HasPrefix(k.ID, "apikey_") || k.Status != "active" || !k.CreatedAt.Equal(t0) || !k.UpdatedAt.Equal(t0) ||
				k.Name != n.Name || k.WorkspaceID != "ws1" || !k.ExpiresAt.Equal(n.ExpiresAt) || k.CreatedBy != by || k.Limits.RPM != 5 {
				t.Errorf("minted %+v from %+v", k, n)
			}
			if k.SecretHash != secretHash(secret) || k.Hint != secret[:len(KeyPrefix)+4]+"..."+secret[len(secret)-4:] {
				t.Errorf("hash %q, hint %q for the secret %q", k.SecretHash, k.Hint, secret)
			}
			keys, _ := c.Runtime()
			if len(keys) != 1 || keys[0].ID != k.ID || keys[0].SecretHash != k.SecretHash {
				t.Fatalf("stored keys %+v, want %s", keys, k.ID)
			}
			if strings.Contains(fmt.Sprintf("%+v", keys[0]), secret[len(KeyPrefix)+4:len(secret)-4]) {
				t.Error("the stored key holds its secret")
			}
			auth, err := NewAuth([]Key{{Secret: "static-secret", ID: "static"}})
			if err != nil {
				t.Fatal(err)
			}
			auth.WithRuntime(c)
			// The key names its person by the identity provider's
			// (issuer, subject), which their upstream MCP grants follow.
			if id, refusal := auth.Identify(secret); refusal != nil || id.KeyID != k.ID || id.Workspace != "ws1" || !id.Runtime ||
				id.Owner != "ada@example.com" || id.Subject != "https://idp.example sub-1" {
				t.Errorf("Identify(minted secret) = %+v, %v", id, refusal)
			}
			k2, secret2, err := c.MintKey(ctx, NewKey{Name: "second"})
			if err != nil {
				t.Fatal(err)
			}
			if k2.ID == k.ID || secret2 == secret || k2.CreatedBy != nil || !k2.ExpiresAt.IsZero() || k2.WorkspaceID != "" {
				t.Errorf("second mint %+v (secret equal: %v)", k2, secret2 == secret)
			}
		})
	}
}

// TestSecretDigest: a stored hash is read as the minter writes it, 64
// lower-case hex digits; anything else matches no key.
func TestSecretDigest(t *testing.T) {
	good := secretHash("s")
	if h, ok := secretDigest(good); !ok || h != digestOf("s") {
		t.Errorf("secretDigest(%q) = %x, %v", good, h, ok)
	}
	for _, bad := range []string{"", good[:62], good + "00", strings.ToUpper(good), "zz" + good[2:], " " + good[1:]} {
		if _, ok := secretDigest(bad); ok {
			t.Errorf("secretDigest(%q) accepted", bad)
		}
	}
}
