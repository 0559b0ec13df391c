package ledger

import (
	"context"
	"crypto/rand"
	"fmt"
)

// A process names the budget lease rows it holds with its instance name,
// one that survives a restart (the gateway keeps it in Caddy's data
// directory), so that a restarted instance releases its previous
// process's rows at once rather than leave them counting until they
// expire. Only a process that holds the name's lock does: a session-level
// advisory lock on a connection kept open for the store's life (one of
// the pool's postgresConns, so an instance stays within its share of
// max_connections), which PostgreSQL drops when the process dies. Two live processes given the
// same name (a data directory they share) do not release each other's
// rows: the second runs under a fresh name of its own.

// InstanceClaimer names a store's budget lease rows by instance.
type InstanceClaimer interface {
	// ClaimInstance takes name for this process's lease rows and deletes
	// the rows a previous process of that name left; when a live process
	// holds name, it takes a fresh one instead. It returns the name taken.
	ClaimInstance(ctx context.Context, name string) (string, error)
}

func (s *sqlStore) ClaimInstance(ctx context.Context, name string) (string, error) {
	if !s.d.sharedReservations || s.claim != nil {
		return s.owner, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return "", fmt.Errorf("ledger: claiming the instance name: %w", err)
	}
	for try := 0; ; try++ {
		var got bool
		if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock(hashtextextended('modelgate instance ' || $1, 0))`, name).Scan(&got); err != nil {
			_ = conn.Close()
			return "", fmt.Errorf("ledger: claiming the instance name: %w", err)
		}
		if got {
			break
		}
		if try == 3 {
			_ = conn.Close()
			return "", fmt.Errorf("ledger: no free instance name after %d tries", try+1)
		}
		name += "-" + rand.Text()[:8] // taken by a live process
	}
	if _, err := conn.ExecContext(ctx, `DELETE FROM budget_reservations WHERE owner = $1`, name); err != nil {
		_ = conn.Close()
		return "", fmt.Errorf("ledger: releasing a previous process's budget leases: %w", err)
	}
	s.owner, s.claim = name, conn
	return name, nil
}

var _ InstanceClaimer = (*sqlStore)(nil)
