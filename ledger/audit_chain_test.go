package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// auditDB is one ledger database opened twice, as two gateway instances
// open it, with what VerifyAudit needs to read it.
type auditDB struct {
	a, b        *sqlStore
	driver, dsn string
}

func openAuditDBs(t *testing.T) map[string]func(t *testing.T) auditDB {
	return map[string]func(t *testing.T) auditDB{
		"sqlite": func(t *testing.T) auditDB {
			path := filepath.Join(t.TempDir(), "ledger.db")
			return auditDB{a: openSQLiteStore(t, path), b: openSQLiteStore(t, path), driver: "sqlite", dsn: path}
		},
		"postgres": func(t *testing.T) auditDB {
			dsn := freshPostgresSchema(t)
			return auditDB{a: openPostgresStore(t, dsn), b: openPostgresStore(t, dsn), driver: "postgres", dsn: dsn}
		},
	}
}

func openSQLiteStore(t *testing.T, path string) *sqlStore {
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*sqlStore)
}

func openPostgresStore(t *testing.T, dsn string) *sqlStore {
	s, err := OpenPostgres(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s.(*sqlStore)
}

// fill appends n entries, half through each instance, all at once.
func (d auditDB) fill(t *testing.T, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		s := d.a
		if i%2 == 1 {
			s = d.b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.AppendAudit(context.Background(), AuditEntry{Time: t0.Add(time.Duration(i) * time.Second), Actor: "admin",
				Action: "key.update", Target: fmt.Sprintf("apikey_%d", i), Source: "10.0.0.1", Fields: map[string]string{"rpm": fmt.Sprint(i)}})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (d auditDB) verify(t *testing.T, anchor *AuditAnchor) AuditVerification {
	t.Helper()
	v, err := VerifyAudit(context.Background(), d.driver, d.dsn, anchor)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func (d auditDB) exec(t *testing.T, q string, args ...any) {
	t.Helper()
	if d.driver == "postgres" {
		for i := 1; strings.Contains(q, "?"); i++ {
			q = strings.Replace(q, "?", fmt.Sprintf("$%d", i), 1)
		}
	}
	if _, err := d.a.db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestAuditChainCatchesTampering: two instances append at once and the
// chain stays one line; then each way of changing the table behind the
// gateway's back (alter, delete, insert, a deleted tail, a rewritten
// chain against an anchor) is named by VerifyAudit at its row.
func TestAuditChainCatchesTampering(t *testing.T) {
	const n = 24
	for name, open := range openAuditDBs(t) {
		t.Run(name, func(t *testing.T) {
			fresh := func(t *testing.T) auditDB {
				d := open(t)
				d.fill(t, n)
				return d
			}
			t.Run("intact", func(t *testing.T) {
				d := fresh(t)
				v := d.verify(t, nil)
				if v.Fault != "" || v.Rows != n || v.HeadSeq != n || len(v.HeadHash) != 64 {
					t.Fatalf("an intact log: %+v", v)
				}
				if again := d.verify(t, &AuditAnchor{Seq: 10, Hash: rowHash(t, d, 10)}); again.Fault != "" {
					t.Fatalf("an intact log against its own anchor: %+v", again)
				}
			})
			cases := []struct {
				name   string
				tamper func(t *testing.T, d auditDB)
				want   string
			}{
				{"altered", func(t *testing.T, d auditDB) {
					d.exec(t, `UPDATE audit_log SET actor = 'mallory' WHERE seq = 5`)
				}, "row seq 5 (id audit_"},
				{"altered fields", func(t *testing.T, d auditDB) {
					d.exec(t, `UPDATE audit_log SET fields = '{"rpm":"1000"}' WHERE seq = 9`)
				}, "row seq 9 (id audit_"},
				{"altered with its hash recomputed", func(t *testing.T, d auditDB) {
					d.exec(t, `UPDATE audit_log SET actor = 'mallory' WHERE seq = 5`)
					d.exec(t, `UPDATE audit_log SET hash = ? WHERE seq = 5`, recomputed(t, d, 5))
				}, "row seq 6 (id audit_"},
				{"deleted", func(t *testing.T, d auditDB) {
					d.exec(t, `DELETE FROM audit_log WHERE seq = 7`)
				}, "row seq 7 is missing (deleted)"},
				{"deleted tail", func(t *testing.T, d auditDB) {
					d.exec(t, `DELETE FROM audit_log WHERE seq >= ?`, n-1)
				}, fmt.Sprintf("rows seq %d to %d are missing (deleted): the chain ends at seq %d", n-1, n, n-2)},
				{"inserted", func(t *testing.T, d auditDB) {
					d.exec(t, `INSERT INTO audit_log (id, ts_us, actor, action, target, source, fields) VALUES ('audit_forged', 1, 'admin', 'key.create', 'x', 'x', '{}')`)
				}, "row audit_forged has no place in the chain"},
				{"inserted at the end", func(t *testing.T, d auditDB) {
					// A forger who chains the row properly but cannot
					// move the head without it showing elsewhere.
					r := auditRow{seq: n + 1, prevHash: rowHash(t, d, n), id: "audit_forged", tsUS: 1, actor: "admin", action: "key.create", target: "x", source: "x", fields: "{}"}
					d.exec(t, `INSERT INTO audit_log (id, ts_us, actor, action, target, source, fields, seq, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
						r.id, r.tsUS, r.actor, r.action, r.target, r.source, r.fields, r.seq, r.prevHash, auditHash(r))
				}, fmt.Sprintf("rows after seq %d were inserted without the gateway", n)},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					d := fresh(t)
					tc.tamper(t, d)
					if v := d.verify(t, nil); !strings.Contains(v.Fault, tc.want) {
						t.Fatalf("verify after the change: %+v; want a fault naming %q", v, tc.want)
					}
				})
			}
			t.Run("rewritten from a row on", func(t *testing.T) {
				d := fresh(t)
				anchor := &AuditAnchor{Seq: n, Hash: rowHash(t, d, n)}
				d.exec(t, `UPDATE audit_log SET actor = 'mallory' WHERE seq = 3`)
				for seq := int64(3); seq <= n; seq++ {
					if seq > 3 {
						d.exec(t, `UPDATE audit_log SET prev_hash = ? WHERE seq = ?`, rowHash(t, d, seq-1), seq)
					}
					d.exec(t, `UPDATE audit_log SET hash = ? WHERE seq = ?`, recomputed(t, d, seq), seq)
				}
				d.exec(t, `UPDATE audit_head SET hash = ? WHERE id = 1`, rowHash(t, d, n))
				if v := d.verify(t, nil); v.Fault != "" {
					t.Fatalf("a whole rewritten chain verifies alone (the anchor is what shows it): %+v", v)
				}
				if v := d.verify(t, anchor); !strings.Contains(v.Fault, fmt.Sprintf("row seq %d (id audit_", n)) || !strings.Contains(v.Fault, "anchor") {
					t.Fatalf("verify against the anchor: %+v", v)
				}
			})
		})
	}
}

// TestAuditChainMigration: rows logged before the chain are chained by
// the migration's step in id order, and appends go on after them.
func TestAuditChainMigration(t *testing.T) {
	for name, open := range openAuditDBs(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			d.fill(t, 6)
			// As a ledger of the release before the chain held them.
			d.exec(t, `UPDATE audit_log SET seq = 0, prev_hash = '', hash = ''`)
			d.exec(t, `UPDATE audit_head SET seq = 0, hash = ''`)
			if v := d.verify(t, nil); !strings.Contains(v.Fault, "has no place in the chain") {
				t.Fatalf("unchained rows: %+v", v)
			}
			ctx := context.Background()
			tx, err := d.a.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.a.chainAuditTx(ctx, tx); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			var first string
			if err := d.a.db.QueryRow(`SELECT id FROM audit_log WHERE seq = 1`).Scan(&first); err != nil {
				t.Fatal(err)
			}
			var oldest string
			if err := d.a.db.QueryRow(`SELECT MIN(id) FROM audit_log`).Scan(&oldest); err != nil || first != oldest {
				t.Fatalf("seq 1 is %s, the oldest row %s (%v)", first, oldest, err)
			}
			d.fill(t, 2)
			if v := d.verify(t, nil); v.Fault != "" || v.Rows != 8 || v.HeadSeq != 8 {
				t.Fatalf("after the migration's chaining and two appends: %+v", v)
			}
		})
	}
}

// TestAuditChainUpgrade: a ledger of the release before the chain (its
// audit rows written, migration 19 not applied) is chained when the new
// release opens it, and verifies.
func TestAuditChainUpgrade(t *testing.T) {
	for name, open := range openAuditDBs(t) {
		t.Run(name, func(t *testing.T) {
			d := open(t)
			d.fill(t, 5)
			var v int
			for step, text := range migrations() {
				if strings.Contains(text, "CREATE TABLE audit_head") {
					v = step
				}
			}
			// Back to the schema before the chain's migration.
			for _, q := range []string{`DROP INDEX audit_log_seq`, `DROP TABLE audit_head`, `ALTER TABLE audit_log DROP COLUMN seq`,
				`ALTER TABLE audit_log DROP COLUMN prev_hash`, `ALTER TABLE audit_log DROP COLUMN hash`, fmt.Sprintf(`DELETE FROM schema_migrations WHERE version = %d`, v)} {
				d.exec(t, q)
			}
			var reopened *sqlStore
			if d.driver == "sqlite" {
				reopened = openSQLiteStore(t, d.dsn)
			} else {
				reopened = openPostgresStore(t, d.dsn)
			}
			if _, err := reopened.AppendAudit(context.Background(), AuditEntry{Actor: "admin", Action: "key.create"}); err != nil {
				t.Fatal(err)
			}
			if got := d.verify(t, nil); got.Fault != "" || got.Rows != 6 {
				t.Fatalf("after the upgrade and one append: %+v, want 6 intact rows", got)
			}
		})
	}
}

// TestAuditChainStepFollowsItsMigration: the Go step that chains the
// rows already logged runs with the migration that adds the chain, under
// whatever number that migration has.
func TestAuditChainStepFollowsItsMigration(t *testing.T) {
	steps := migrationSteps()
	if len(steps) != 1 {
		t.Fatalf("%d migration steps; this test knows one", len(steps))
	}
	for v := range steps {
		if !strings.Contains(migrations()[v], "CREATE TABLE audit_head") {
			t.Errorf("migration %d, whose step chains the audit log, does not add the chain", v)
		}
	}
}

func rowHash(t *testing.T, d auditDB, seq int64) string {
	t.Helper()
	var h string
	if err := d.a.db.QueryRow(`SELECT hash FROM audit_log WHERE seq = `+d.a.d.placeholder(1), seq).Scan(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// recomputed is the hash row seq would have now, as a forger would
// compute it.
func recomputed(t *testing.T, d auditDB, seq int64) string {
	t.Helper()
	var r auditRow
	if err := d.a.db.QueryRow(`SELECT seq, id, ts_us, actor, action, target, source, fields, prev_hash FROM audit_log WHERE seq = `+d.a.d.placeholder(1), seq).
		Scan(&r.seq, &r.id, &r.tsUS, &r.actor, &r.action, &r.target, &r.source, &r.fields, &r.prevHash); err != nil {
		t.Fatal(err)
	}
	return auditHash(r)
}

// BenchmarkAuditAppend is one admin action's audit row: with the chain,
// a transaction that locks the head, inserts and moves the head.
func BenchmarkAuditAppend(b *testing.B) {
	for _, sf := range storeFactories() {
		b.Run(sf.name, func(b *testing.B) {
			as := sf.open(b).(AuditStore)
			e := AuditEntry{Actor: "admin", Action: "key.update", Target: "apikey_1", Source: "10.0.0.1", Fields: map[string]string{"rpm": "60"}}
			for b.Loop() {
				if _, err := as.AppendAudit(context.Background(), e); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
