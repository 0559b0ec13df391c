package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestTwoGatewaysShareAPostgresLedger runs two gateway processes on one
// PostgreSQL ledger (a fresh schema), sends traffic to both at once, and
// reads one report, from either instance, that counts every request.
func TestTwoGatewaysShareAPostgresLedger(t *testing.T) {
	dsn := os.Getenv("MODELGATE_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("MODELGATE_TEST_POSTGRES unset: scripts/test.sh starts PostgreSQL on loopback and sets it")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	schema := fmt.Sprintf("it_%d", time.Now().UnixNano())
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()

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
