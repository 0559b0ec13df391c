package caddymodule

import (
	"context"
	"crypto/rand"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/caddyserver/caddy/v2"
	"github.com/modelgate/modelgate/ledger"
)

// claimInstance names this process's budget lease rows in a shared
// ledger with the instance name kept in Caddy's data directory, made the
// first time, so that after a restart the new process releases the rows
// its predecessor held (ledger/instance.go). Without a writable data
// directory the name is fresh each start, and a predecessor's rows only
// expire.
func claimInstance(ctx context.Context, store ledger.Store) error {
	c, ok := store.(ledger.InstanceClaimer)
	if !ok {
		return nil
	}
	if _, err := c.ClaimInstance(ctx, instanceName(filepath.Join(caddy.AppDataDir(), "modelgate", "instance-id"))); err != nil {
		_ = store.Close()
		return err
	}
	return nil
}

// instanceName reads the instance name kept at path, making it when
// there is none.
func instanceName(path string) string {
	if b, err := os.ReadFile(path); err == nil {
		if name := strings.TrimSpace(string(b)); name != "" && len(name) <= 64 {
			return name
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return rand.Text()
	}
	name := rand.Text()
	if os.MkdirAll(filepath.Dir(path), 0o700) == nil {
		_ = os.WriteFile(path, []byte(name+"\n"), 0o600)
	}
	return name
}
