package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

// reportsConfig is `go run ./bench -reports`: seed a ledger with records
// over 90 days and time the usage and cost reports the dashboard draws,
// one page (31 daily buckets, the most a page holds) each.
type reportsConfig struct {
	records  int
	postgres string // DSN; empty: SQLite only
	runs     int
	workdir  string
}

// runReports seeds each store and prints a table of report latencies.
func runReports(ctx context.Context, c reportsConfig) error {
	dir := c.workdir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "modelgate-reports-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	type store struct {
		name string
		open func() (ledger.Store, error)
	}
	stores := []store{{"SQLite", func() (ledger.Store, error) { return ledger.OpenSQLite(filepath.Join(dir, "reports.db")) }}}
	if c.postgres != "" {
		stores = append(stores, store{"PostgreSQL", func() (ledger.Store, error) { return ledger.OpenPostgres(ctx, c.postgres) }})
	}
	fmt.Printf("## Reports over %d records and 90 days\n\n", c.records)
	fmt.Println("| store | seeding | report | p50 | p95 | max |")
	fmt.Println("|---|---:|---|---:|---:|---:|")
	for _, st := range stores {
		s, err := st.open()
		if err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		seedStart := time.Now()
		end := time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
		if err := seedRecords(ctx, s, c.records, end.Add(-90*24*time.Hour)); err != nil {
			s.Close()
			return fmt.Errorf("%s: seeding: %w", st.name, err)
		}
		seeded := time.Since(seedStart)
		queries := []struct {
			name string
			run  func() error
		}{
			{"usage, 31 days by model and key", func() error {
				q, err := ledger.ParseUsageQuery(map[string][]string{"starting_at": {end.Add(-90 * 24 * time.Hour).Format(time.RFC3339)},
					"ending_at": {end.Format(time.RFC3339)}, "limit": {"31"}, "group_by[]": {"model", "api_key_id"}}, end)
				if err != nil {
					return err
				}
				_, err = ledger.UsageReport(ctx, s, q)
				return err
			}},
			{"cost, 31 days by model and key", func() error {
				q, err := ledger.ParseCostQuery(map[string][]string{"starting_at": {end.Add(-90 * 24 * time.Hour).Format(time.RFC3339)},
					"ending_at": {end.Format(time.RFC3339)}, "limit": {"31"}, "group_by[]": {"description", "api_key_id"}}, end)
				if err != nil {
					return err
				}
				_, err = ledger.CostReport(ctx, s, q)
				return err
			}},
		}
		for i, qq := range queries {
			var lat []time.Duration
			for r := 0; r < c.runs; r++ {
				t0 := time.Now()
				if err := qq.run(); err != nil {
					s.Close()
					return fmt.Errorf("%s: %s: %w", st.name, qq.name, err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			seed := ""
			if i == 0 {
				seed = seeded.Round(time.Second).String()
			}
			fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", st.name, seed, qq.name, msOf(lat[len(lat)/2]),
				msOf(lat[min(len(lat)-1, len(lat)*95/100)]), msOf(lat[len(lat)-1]))
		}
		s.Close()
	}
	return nil
}

func msOf(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) + " ms"
}

// seedRecords writes n records over the 90 days from start, in time order
// as a gateway writes them: 40 keys in 5 workspaces, 8 models, sessions,
// realistic usage and prices.
func seedRecords(ctx context.Context, s ledger.Store, n int, start time.Time) error {
	rng := rand.New(rand.NewPCG(1, 2))
	models := []string{"claude", "claude-haiku", "coder", "gpt", "gpt-mini", "local", "llama", "echo"}
	step := float64(90*24*time.Hour) / float64(n)
	batch := make([]ledger.Record, 0, 5000)
	for i := 0; i < n; i++ {
		alias := models[rng.IntN(len(models))]
		key := rng.IntN(40)
		r := ledger.Record{
			Time: start.Add(time.Duration(float64(i) * step)), KeyID: "key-" + strconv.Itoa(key),
			Workspace: "team-" + strconv.Itoa(key%5), Alias: alias, UpstreamModel: alias + "-2026", Provider: "openai",
			ServiceTier: "standard", Endpoint: ledger.EndpointChatCompletions, Status: 200, Outcome: ledger.OutcomeOK,
			InputTokens: rng.Int64N(20000), OutputTokens: rng.Int64N(2000), CacheReadTokens: rng.Int64N(40000),
			SessionID: "s-" + strconv.Itoa(rng.IntN(20000)),
			Prices:    ledger.Prices{Input: 3_000_000, Output: 15_000_000, CacheRead: 300_000},
		}
		r.CostPicoUSD = r.Prices.Cost(&r)
		batch = append(batch, r)
		if len(batch) == cap(batch) || i == n-1 {
			if err := s.Insert(ctx, batch); err != nil {
				return err
			}
			batch = batch[:0]
		}
	}
	return nil
}
