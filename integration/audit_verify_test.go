package integration

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestAuditVerifyCLI: `caddy modelgate audit verify --config Caddyfile`
// reads the ledger the Caddyfile names (SQLite, and PostgreSQL through an
// {env.…} placeholder) while the gateway runs: the log of real admin
// actions is intact; a row altered, deleted or inserted behind the
// gateway's back makes it exit non-zero naming that row; undoing the
// change makes it pass again.
func TestAuditVerifyCLI(t *testing.T) {
	type db struct {
		exec func(q string, args ...any) error
		env  []string
		cfg  gatewayConfig
	}
	u := startUpstreams(t, fakes.Options{})
	setups := map[string]func(t *testing.T) db{
		"sqlite": func(t *testing.T) db {
			path := filepath.Join(t.TempDir(), "ledger.db")
			conn, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = conn.Close() })
			return db{cfg: gatewayConfig{models: u.modelsYAML(), ledgerPath: path},
				exec: func(q string, args ...any) error { _, err := conn.Exec(q, args...); return err }}
		},
		"postgres": func(t *testing.T) db {
			dsn, conn, schema := freshSchema(t)
			env := []string{"DATABASE_URL=" + dsn.String()}
			return db{cfg: gatewayConfig{models: u.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: env}, env: env,
				exec: func(q string, args ...any) error {
					q = strings.ReplaceAll(q, "audit_log", schema+".audit_log")
					for i := 1; strings.Contains(q, "?"); i++ {
						q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
					}
					_, err := conn.Exec(context.Background(), q, args...)
					return err
				}}
		},
	}
	for name, setup := range setups {
		t.Run(name, func(t *testing.T) {
			d := setup(t)
			g := startGateway(t, d.cfg)
			for i := range 3 {
				createKey(t, g, fmt.Sprintf(`{"name":"audited-%d"}`, i))
			}
			verify := func() (string, error) {
				out, stderr, err := caddyCmd(t, d.env, "modelgate", "audit", "verify", "--config", filepath.Join(g.dir, "Caddyfile"))
				return out + stderr, err
			}
			mustPass := func(when string) {
				t.Helper()
				if out, err := verify(); err != nil || !strings.Contains(out, "audit log intact: ") {
					t.Fatalf("verify %s: %v\n%s", when, err, out)
				}
			}
			mustFail := func(when, want string) {
				t.Helper()
				out, err := verify()
				if err == nil || !strings.Contains(out, want) {
					t.Fatalf("verify %s: %v\n%s\nwant a non-zero exit naming %q", when, err, out, want)
				}
			}
			must := func(q string, args ...any) {
				t.Helper()
				if err := d.exec(q, args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			mustPass("of the gateway's own log")

			must(`UPDATE audit_log SET actor = actor || 'x' WHERE seq = 2`)
			mustFail("after an edit", "row seq 2 (id audit_")
			must(`UPDATE audit_log SET actor = substr(actor, 1, length(actor) - 1) WHERE seq = 2`)
			mustPass("with the edit undone")

			must(`INSERT INTO audit_log (id, ts_us, actor, action, target, source, fields) VALUES ('audit_forged', 1, 'admin', 'key.create', 'x', 'x', '{}')`)
			mustFail("after an insert", "row audit_forged has no place in the chain")
			must(`DELETE FROM audit_log WHERE id = 'audit_forged'`)
			mustPass("with the insert undone")

			must(`DELETE FROM audit_log WHERE seq = 3`)
			mustFail("after a delete", "row seq 3 is missing (deleted)")
		})
	}
}
