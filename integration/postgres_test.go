package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testlane"
)

// TestTwoGatewaysShareAPostgresLedger runs two gateway processes on one
// PostgreSQL ledger (a fresh schema), sends traffic to both at once, and
// reads one report, from either instance, that counts every request.
func TestTwoGatewaysShareAPostgresLedger(t *testing.T) {
	u, _, _ := freshSchema(t)

	up := startUpstreams(t, fakes.Options{})
	cfg := gatewayConfig{models: up.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + u.String()}}
	a, b := startGateway(t, cfg), startGateway(t, cfg)

	const perGateway = 20
	var wg sync.WaitGroup
	for _, g := range []*gateway{a, b} {
		for i := 0; i < perGateway; i++ {
			wg.Add(1)
			go func(g *gateway) {
				defer wg.Done()
				st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"llama","messages":[{"role":"user","content":"hi"}]}`)
				if st != 200 {
					t.Errorf("status %d: %s", st, body)
				}
			}(g)
		}
	}
	wg.Wait()
	a.stop(t)
	b.stop(t)

	c := startGateway(t, cfg)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	rq := url.Values{"starting_at": {day.Format(time.RFC3339)}, "ending_at": {day.Add(24 * time.Hour).Format(time.RFC3339)}}
	st, _, body := c.do(t, "GET", "/v1/organizations/usage_report/messages?"+rq.Encode(), adminKey, "")
	var rep struct {
		Data []struct {
			Results []struct {
				Uncached int64 `json:"uncached_input_tokens"`
				Output   int64 `json:"output_tokens"`
			} `json:"results"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &rep); st != 200 || err != nil || len(rep.Data) != 1 || len(rep.Data[0].Results) != 1 {
		t.Fatalf("report: %d %v %s", st, err, body)
	}
	r := rep.Data[0].Results[0]
	if want := int64(2 * perGateway * fakes.OllamaPromptEvalCount); r.Uncached != want || r.Output != 2*perGateway*fakes.OllamaEvalCount {
		t.Errorf("shared ledger: input %d output %d, want %d and %d", r.Uncached, r.Output, want, 2*perGateway*fakes.OllamaEvalCount)
	}
}

// TestReadinessFollowsLedgerWrites: readiness used to say ok while every
// ledger write failed. With the usage table gone it turns 503 once a
// write fails, and 200 again once the database takes rows, with no
// traffic needed (a probe insert, rolled back).
func TestReadinessFollowsLedgerWrites(t *testing.T) {
	u, conn, schema := freshSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	up := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: up.modelsYAML(), ledgerLine: "ledger postgres {env.DATABASE_URL}", env: []string{"DATABASE_URL=" + u.String()}})

	waitReadiness := func(want int) string {
		t.Helper()
		var body []byte
		for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			var st int
			st, _, body = g.do(t, "GET", "/health/readiness", "", "")
			if st == want {
				return string(body)
			}
		}
		t.Fatalf("readiness never answered %d; last %s\nlog:\n%s", want, body, g.stderr.String())
		return ""
	}
	waitReadiness(http.StatusOK)
	if _, err := conn.Exec(ctx, "ALTER TABLE "+schema+".usage_records RENAME TO usage_records_away"); err != nil {
		t.Fatal(err)
	}
	if st, _, body := g.do(t, "POST", "/v1/chat/completions", aliceKey, `{"model":"echo","messages":[{"role":"user","content":"hi"}]}`); st != 200 {
		t.Fatalf("serving must go on while the ledger fails: %d %s", st, body)
	}
	body := waitReadiness(http.StatusServiceUnavailable)
	if !strings.Contains(body, "ledger") || strings.Contains(body, schema) || strings.Contains(body, "postgres") {
		t.Errorf("readiness body %s: want the ledger named and no database detail", body)
	}
	if _, err := conn.Exec(ctx, "ALTER TABLE "+schema+".usage_records_away RENAME TO usage_records"); err != nil {
		t.Fatal(err)
	}
	waitReadiness(http.StatusOK)
}

// freshSchema makes an empty schema on the test PostgreSQL for one test
// (dropped after it) and returns a DSN that uses it, an admin connection
// and the schema's name. Without MODELGATE_TEST_POSTGRES the test skips.
func freshSchema(t *testing.T) (*url.URL, *pgx.Conn, string) {
	t.Helper()
	testlane.FullOnly(t, "PostgreSQL (MODELGATE_TEST_POSTGRES)")
	dsn := os.Getenv("MODELGATE_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("MODELGATE_TEST_POSTGRES unset: scripts/test.sh starts PostgreSQL on loopback and sets it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	schema := fmt.Sprintf("it_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		_ = conn.Close(context.Background())
	})
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u, conn, schema
}
