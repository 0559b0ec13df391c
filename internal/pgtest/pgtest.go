// Package pgtest gives a test its own empty schema on the PostgreSQL server
// that scripts/postgres.sh starts (its DSN in MODELGATE_TEST_POSTGRES), so
// tests sharing one server never see each other's rows.
package pgtest

import (
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/modelgate/modelgate/internal/testlane"
)

// DSN is the test server's DSN; without one the test is skipped, naming
// the script that starts a server.
func DSN(t testing.TB) string {
	t.Helper()
	testlane.FullOnly(t, "PostgreSQL (MODELGATE_TEST_POSTGRES)")
	dsn := os.Getenv("MODELGATE_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("MODELGATE_TEST_POSTGRES unset: run `eval export $(scripts/postgres.sh | tail -n1)` to test against PostgreSQL")
	}
	return dsn
}

// FreshSchema creates an empty schema for one test, dropped when it ends,
// and returns a DSN whose connections use it.
func FreshSchema(t testing.TB) string {
	t.Helper()
	dsn := DSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "test_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec("CREATE SCHEMA " + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		_ = admin.Close()
	})
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	return dsn + sep + "search_path=" + schema
}
