package ledger

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestWriterStoresHostileText: invalid UTF-8, NUL bytes and a multi-byte
// value cut mid-rune (as a 128-byte header cut leaves it) used to fail the
// whole PostgreSQL batch, losing every other user's record in it.
func TestWriterStoresHostileText(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		w := NewWriter(s, WriterOptions{BatchSize: 64, FlushInterval: time.Hour})
		w.Start()
		const n = 10
		for i := range n {
			r := sampleRecord(i)
			switch i {
			case 2:
				r.SessionID = "sess-\xff\xfe-bad"
			case 4:
				r.SessionID = strings.Repeat("é", 200)[:127] // cut inside a rune
			case 6:
				r.KeyID = "ali\x00ce"
			case 8:
				r.RequestID = strings.Repeat("x", 10_000)
			}
			if !w.Enqueue(r) {
				t.Fatal("enqueue refused")
			}
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := w.Stats(); st.Written != n || st.WriteErrors != 0 {
			t.Fatalf("stats %+v, want %d written and no errors", st, n)
		}
		got, err := s.Query(context.Background(), Filter{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != n {
			t.Fatalf("stored %d records, want %d", len(got), n)
		}
		for _, r := range got {
			for _, v := range []string{r.SessionID, r.KeyID, r.RequestID} {
				if !utf8.ValidString(v) || strings.IndexByte(v, 0) >= 0 || len(v) > maxTextBytes {
					t.Fatalf("stored text %q is not clean", v)
				}
			}
		}
	})
}

// poison makes the store refuse rows whose key_id is "poison", the way a
// database refuses a value it cannot hold.
func poison(t *testing.T, s Store) {
	t.Helper()
	db := s.(*sqlStore).db
	var stmt string
	if s.(*sqlStore).d.name == "postgres" {
		stmt = `ALTER TABLE usage_records ADD CONSTRAINT no_poison CHECK (key_id <> 'poison') NOT VALID`
	} else {
		stmt = `CREATE TRIGGER no_poison BEFORE INSERT ON usage_records WHEN NEW.key_id = 'poison'
			BEGIN SELECT RAISE(ABORT, 'poison row'); END`
	}
	if _, err := db.Exec(stmt); err != nil {
		t.Fatal(err)
	}
}

// TestWriterSetsAsideRefusedRows: a batch the database refuses for one
// row's data writes every other record and counts only the refused ones.
func TestWriterSetsAsideRefusedRows(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		poison(t, s)
		var logged []string
		w := NewWriter(s, WriterOptions{BatchSize: 256, FlushInterval: time.Hour, RetryBackoff: time.Millisecond,
			Logger: func(msg string, err error) { logged = append(logged, msg) }})
		w.Start()
		for i := range 256 {
			r := sampleRecord(i)
			if i == 17 || i == 200 {
				r.KeyID = "poison"
			}
			w.Enqueue(r)
		}
		if err := w.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if st := w.Stats(); st.Written != 254 || st.WriteErrors != 2 {
			t.Fatalf("stats %+v, want 254 written and 2 write errors", st)
		}
		if got := countRecords(t, s); got != 254 {
			t.Fatalf("stored %d records, want 254", got)
		}
		if len(logged) != 1 || !strings.Contains(logged[0], "2 of 256") {
			t.Fatalf("logged %q, want one line naming 2 of 256", logged)
		}
	})
}

// TestRecordBoundsClampUsage: an upstream's negative or absurd counts
// never reach the store as such, and cost saturates instead of wrapping.
func TestRecordBoundsClampUsage(t *testing.T) {
	r := Record{InputTokens: -5, OutputTokens: math.MaxInt64, CacheReadTokens: 1 << 40}
	p := Prices{Input: 3_000_000, Output: 15_000_000, CacheRead: math.MaxInt64}
	p.Apply(&r)
	if r.CostPicoUSD != MaxCost {
		t.Fatalf("cost %d, want the bound %d", r.CostPicoUSD, int64(MaxCost))
	}
	r.sanitize()
	if r.InputTokens != 0 || r.OutputTokens != MaxTokens || r.CacheReadTokens != MaxTokens || r.Prices.CacheRead != MaxPrice {
		t.Fatalf("not clamped: %+v", r)
	}
	small := Record{InputTokens: 1000, OutputTokens: 10}
	p.Apply(&small)
	if small.CostPicoUSD != 1000*3_000_000+10*15_000_000 {
		t.Fatalf("ordinary cost changed: %d", small.CostPicoUSD)
	}
}

// TestReportsSurviveAbsurdStoredRows: rows stored before the bounds held
// (or written by another tool) must not make the reports fail; they used
// to overflow the SQL sums and answer 500 for every range holding them.
func TestReportsSurviveAbsurdStoredRows(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		var recs []Record
		for i := range 4 {
			r := sampleRecord(i)
			r.InputTokens, r.OutputTokens, r.CacheReadTokens = math.MaxInt64/2, -7, math.MaxInt64
			r.Prices = Prices{Input: math.MaxInt64 / 3, Output: 15_000_000, CacheRead: -1}
			r.CostPicoUSD = math.MaxInt64
			recs = append(recs, r)
		}
		if err := s.Insert(context.Background(), recs); err != nil { // straight in, past the writer
			t.Fatal(err)
		}
		u := usage(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z&bucket_width=1d&group_by[]=model&group_by[]=api_key_id")
		if len(u.Data) != 1 || len(u.Data[0].Results) != 1 {
			t.Fatalf("usage report %+v", u)
		}
		res := u.Data[0].Results[0]
		if res.UncachedInputTokens != 4*MaxTokens || res.OutputTokens != 0 || res.CacheReadInputTokens != 4*MaxTokens {
			t.Fatalf("usage not clamped per row: %+v", res)
		}
		for _, q := range []string{"", "&group_by[]=description", "&group_by[]=workspace_id"} {
			c := cost(t, s, "starting_at=2025-09-01T00:00:00Z&ending_at=2025-09-02T00:00:00Z&bucket_width=1d"+q)
			for _, b := range c.Data {
				for _, r := range b.Results {
					if strings.HasPrefix(r.Amount, "-") {
						t.Fatalf("negative amount %q in %+v", r.Amount, c)
					}
				}
			}
		}
	})
}
