package ledger

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
)

// freshPostgresSchema creates an empty schema for one test and returns a DSN
// whose connections use it, so tests never see each other's rows.
func freshPostgresSchema(t testing.TB) string { return pgtest.FreshSchema(t) }

type storeFactory struct {
	name string
	open func(t testing.TB) Store
}

func storeFactories() []storeFactory {
	return []storeFactory{
		{"sqlite", func(t testing.TB) Store {
			s, err := OpenSQLite(filepath.Join(t.TempDir(), "sub", "ledger.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
		{"postgres", func(t testing.TB) Store {
			s, err := OpenPostgres(context.Background(), freshPostgresSchema(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
}

func forEachStore(t *testing.T, f func(t *testing.T, s Store)) {
	for _, sf := range storeFactories() {
		t.Run(sf.name, func(t *testing.T) { f(t, sf.open(t)) })
	}
}

var t0 = time.Date(2025, 9, 1, 0, 0, 0, 0, time.UTC)

func sampleRecord(i int) Record {
	r := Record{
		Time:            t0.Add(time.Duration(i) * time.Minute).Add(1234 * time.Microsecond),
		RequestID:       "req_" + string(rune('a'+i%26)),
		KeyID:           "alice",
		Workspace:       "frontend",
		Alias:           "claude",
		UpstreamModel:   "claude-sonnet-4-5-20250929",
		Provider:        "anthropic",
		ServiceTier:     "standard",
		Endpoint:        "messages",
		Stream:          i%2 == 0,
		InputTokens:     int64(100 + i),
		CacheCreation5m: 10,
		CacheCreation1h: 20,
		CacheReadTokens: 30,
		OutputTokens:    40,
		Status:          200,
		Outcome:         "ok",
		Latency:         1500 * time.Millisecond,
		TTFT:            200 * time.Millisecond,
		SessionID:       "sess-1",
	}
	p, _ := BuiltinPrices("anthropic", r.UpstreamModel)
	p.Apply(&r)
	return r
}

func TestStoreRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		want := []Record{sampleRecord(0), sampleRecord(1)}
		want[1].KeyID, want[1].Workspace, want[1].Stream = "bob", "", false
		want[1].ServiceTier, want[1].ContextWindow = "batch", ContextWindowLarge
		if err := s.Insert(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := s.Query(ctx, Filter{From: t0, To: t0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		want[0].ContextWindow = ContextWindowSmall // derived on insert
		if len(got) != 2 {
			t.Fatalf("got %d records, want 2", len(got))
		}
		for i := range want {
			if !got[i].Time.Equal(want[i].Time) || got[i].Time.Location() != time.UTC {
				t.Errorf("record %d time = %v, want %v UTC", i, got[i].Time, want[i].Time)
			}
			got[i].Time = want[i].Time
			if got[i] != want[i] {
				t.Errorf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
			}
		}
	})
}

func TestStoreQueryFilters(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		var recs []Record
		for i := range 6 {
			r := sampleRecord(i)
			r.Alias = []string{"claude", "local"}[i%2]
			r.KeyID = []string{"alice", "bob", "carol"}[i%3]
			recs = append(recs, r)
		}
		recs[5].ServiceTier = "batch"
		recs[4].ContextWindow = ContextWindowLarge
		if err := s.Insert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		tests := []struct {
			name string
			f    Filter
			want []string // "alias/key" of the matches, oldest first
		}{
			{"time range is half open", Filter{From: t0.Add(time.Minute), To: t0.Add(3 * time.Minute)},
				[]string{"local/bob", "claude/carol"}},
			{"models", Filter{Models: []string{"local"}}, []string{"local/bob", "local/alice", "local/carol"}},
			{"keys", Filter{APIKeyIDs: []string{"alice", "carol"}},
				[]string{"claude/alice", "claude/carol", "local/alice", "local/carol"}},
			{"models and keys", Filter{Models: []string{"claude"}, APIKeyIDs: []string{"bob"}}, []string{"claude/bob"}},
			{"workspace none", Filter{WorkspaceIDs: []string{"backend"}}, nil},
			{"tier", Filter{ServiceTiers: []string{"batch"}}, []string{"local/carol"}},
			{"excluded tier", Filter{ExcludeServiceTiers: []string{"standard", "priority"}}, []string{"local/carol"}},
			{"window", Filter{ContextWindows: []string{ContextWindowLarge}}, []string{"claude/bob"}},
		}
		for _, tt := range tests {
			f := tt.f
			if f.From.IsZero() {
				f.From, f.To = t0, t0.Add(time.Hour)
			}
			got, err := s.Query(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, r := range got {
				names = append(names, r.Alias+"/"+r.KeyID)
			}
			if !slices.Equal(names, tt.want) {
				t.Errorf("%s: got %v, want %v", tt.name, names, tt.want)
			}
		}
	})
}

// A batch larger than one statement's parameter limit is split but still
// committed as one transaction.
func TestStoreLargeBatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ctx := context.Background()
		recs := make([]Record, 3000)
		for i := range recs {
			recs[i] = sampleRecord(i % 50)
		}
		if err := s.Insert(ctx, recs); err != nil {
			t.Fatal(err)
		}
		got, err := s.Query(ctx, Filter{From: t0, To: t0.Add(24 * time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3000 {
			t.Fatalf("got %d records, want 3000", len(got))
		}
	})
}

func TestSQLiteReopenKeepsDataAndMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	s, err := OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(context.Background(), []Record{sampleRecord(0)}); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()
	s, err = OpenSQLite(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Query(context.Background(), Filter{From: t0, To: t0.Add(time.Hour)})
	if err != nil || len(got) != 1 {
		t.Fatalf("after reopen: %d records, err %v", len(got), err)
	}
	var versions int
	if err := s.(*sqlStore).db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(); versions != want {
		t.Fatalf("schema_migrations has %d rows, want %d", versions, want)
	}
}

// Several gateway instances starting at once against one database must
// apply each migration exactly once and all come up.
func TestPostgresConcurrentMigrations(t *testing.T) {
	dsn := freshPostgresSchema(t)
	const n = 6
	var wg sync.WaitGroup
	errs := make([]error, n)
	stores := make([]Store, n)
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = OpenPostgres(context.Background(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	var versions int
	if err := stores[0].(*sqlStore).db.QueryRow("SELECT COUNT(*) FROM schema_migrations").Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if want := migrationCount(); versions != want {
		t.Fatalf("schema_migrations has %d rows, want %d", versions, want)
	}
	if err := stores[3].Insert(context.Background(), []Record{sampleRecord(0)}); err != nil {
		t.Fatal(err)
	}
	got, err := stores[5].Query(context.Background(), Filter{From: t0, To: t0.Add(time.Hour)})
	if err != nil || len(got) != 1 {
		t.Fatalf("shared ledger: %d records, err %v", len(got), err)
	}
}

func TestOpenPostgresErrorHidesPassword(t *testing.T) {
	_, err := OpenPostgres(context.Background(), "postgres://u:s3cret-pw@127.0.0.1:1/db?connect_timeout=1")
	if err == nil {
		t.Fatal("connecting to a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("error reveals the password: %v", err)
	}
	_, err = OpenPostgres(context.Background(), "postgres://u:s3cret-pw@[::1:bad/db")
	if err == nil || strings.Contains(err.Error(), "s3cret-pw") {
		t.Fatalf("bad DSN: err = %v", err)
	}
}

// migrationCount is how many migrations migrate applies: every number
// from 1, contiguous.
func migrationCount() int {
	for v, m := range migrations()[1:] {
		if m == "" {
			panic(fmt.Sprintf("migration %d is empty: migrations are numbered without gaps", v+1))
		}
	}
	return len(migrations()) - 1
}
