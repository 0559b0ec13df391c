package caddymodule

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"

	"github.com/modelgate/modelgate/ledger"
)

// TestRetentionOption: `retention` takes a duration of at least a day;
// without it nothing is set (records are kept forever).
func TestRetentionOption(t *testing.T) {
	for input, want := range map[string]string{
		"modelgate {\nretention 400d\n}":      `{"retention":34560000000000000}`,
		"modelgate {\nledger sqlite /x.db\n}": `{"ledger":{"driver":"sqlite","dsn":"/x.db"}}`,
	} {
		v, err := parseAppOption(caddyfile.NewTestDispenser(input), nil)
		if err != nil {
			t.Fatalf("%q: %v", input, err)
		}
		if got := string(v.(httpcaddyfile.App).Value); got != want {
			t.Errorf("%q: %s, want %s", input, got, want)
		}
	}
	for _, input := range []string{"modelgate {\nretention 12h\n}", "modelgate {\nretention forever\n}", "modelgate {\nretention\n}", "modelgate {\nretention -5d\n}"} {
		if _, err := parseAppOption(caddyfile.NewTestDispenser(input), nil); err == nil || !strings.Contains(err.Error(), "retention") {
			t.Errorf("%q: %v, want an error naming retention", input, err)
		}
	}
	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	a := &App{Ledger: &LedgerConfig{Driver: "sqlite", DSN: filepath.Join(t.TempDir(), "l.db")}, Retention: caddy.Duration(time.Hour)}
	if err := a.Provision(ctx); err == nil || !strings.Contains(err.Error(), "retention") {
		t.Errorf("JSON retention of an hour: %v", err)
	}
}

// TestRetentionPurgesOldRecords: with retention set, the app deletes the
// records older than it when it starts, keeps newer ones, and the daily
// report over the purged day still answers from the roll-up.
func TestRetentionPurgesOldRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	now := time.Now().UTC()
	day := now.Truncate(24*time.Hour).AddDate(0, 0, -500)
	store, err := ledger.OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(at time.Time) ledger.Record {
		return ledger.Record{Time: at, KeyID: "alice", Alias: "echo", Status: 200, Outcome: "ok", ServiceTier: "standard", InputTokens: 7, OutputTokens: 3}
	}
	if err := store.Insert(context.Background(), []ledger.Record{rec(day.Add(time.Hour)), rec(now.Add(-time.Hour))}); err != nil {
		t.Fatal(err)
	}
	store.Close()

	ctx, cancel := caddy.NewContext(caddy.Context{Context: context.Background()})
	defer cancel()
	a := &App{Ledger: &LedgerConfig{Driver: "sqlite", DSN: path}, Retention: caddy.Duration(400 * 24 * time.Hour)}
	if err := a.Provision(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = a.Stop() }()
	all := ledger.Filter{From: day, To: now.Add(time.Hour)}
	var recs []ledger.Record
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if recs, err = a.Store().Query(context.Background(), all); err != nil || len(recs) < 2 {
			break
		}
	}
	if err != nil || len(recs) != 1 || !recs[0].Time.After(day.AddDate(0, 0, 1)) {
		t.Fatalf("records after start: %v %v, want only the recent one", recs, err)
	}
	rows, err := a.Store().Aggregate(context.Background(), ledger.Filter{From: day, To: day.AddDate(0, 0, 1)}, 24*time.Hour, nil)
	if err != nil || len(rows) != 1 || rows[0].InputTokens != 7 {
		t.Errorf("the purged day's roll-up: %+v %v", rows, err)
	}
}
