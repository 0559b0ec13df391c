package ledger

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkSQLiteInsertBatch measures one writer batch (256 records, the
// default batch size) going into SQLite: the ledger's main CPU cost on a
// busy gateway. "256-keys" is a batch of one record per key.
func BenchmarkSQLiteInsertBatch(b *testing.B) {
	for _, perKey := range []bool{false, true} {
		name := "one-key"
		if perKey {
			name = "256-keys"
		}
		b.Run(name, func(b *testing.B) {
			s, err := OpenSQLite(filepath.Join(b.TempDir(), "l.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			batch := make([]Record, 256)
			now := time.Now().UTC()
			for i := range batch {
				batch[i] = Record{Time: now, KeyID: "alice", Workspace: "w", Alias: "oa", UpstreamModel: "gpt-4o", Provider: "openai",
					ServiceTier: "standard", Endpoint: "chat_completions", InputTokens: 100, OutputTokens: 20, Status: 200, Outcome: "ok",
					Latency: 12 * time.Millisecond, TTFT: 3 * time.Millisecond, CostPicoUSD: 12345}
				if perKey {
					batch[i].KeyID = "key-" + strconv.Itoa(i)
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := s.Insert(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPostgresInsertBatch measures writer batches going into
// PostgreSQL, the ledger of a team's gateway: fixed sizes, and "varied",
// where consecutive batches differ in size as they do under real load,
// and "256-keys", a batch of one record per key, as a team's load is.
// It needs $MODELGATE_TEST_POSTGRES. The figure is per record.
func BenchmarkPostgresInsertBatch(b *testing.B) {
	now := time.Now().UTC()
	rec := func(i int) Record {
		return Record{Time: now.Add(time.Duration(i) * time.Microsecond), RequestID: "req_" + strconv.Itoa(i), KeyID: "alice", Workspace: "w",
			Alias: "oa", UpstreamModel: "gpt-4o", Provider: "openai", ServiceTier: "standard", Endpoint: "chat_completions",
			InputTokens: 100, OutputTokens: 20, Status: 200, Outcome: "ok", Latency: 12 * time.Millisecond, TTFT: 3 * time.Millisecond,
			CostPicoUSD: 12345}
	}
	for _, size := range []int{16, 256, 0, -256} {
		name := "varied"
		switch {
		case size < 0:
			name = "256-keys"
		case size > 0:
			name = strconv.Itoa(size)
		}
		perKey := size < 0
		size = max(size, -size)
		b.Run(name, func(b *testing.B) {
			s, err := OpenPostgres(context.Background(), freshPostgresSchema(b))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			batch := make([]Record, 256)
			for i := range batch {
				batch[i] = rec(i)
				if perKey {
					batch[i].KeyID = "key-" + strconv.Itoa(i)
				}
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for i := range b.N {
				k := size
				if k == 0 {
					k = 1 + (i*37)%256
				}
				if err := s.Insert(ctx, batch[:k]); err != nil {
					b.Fatal(err)
				}
				n += k
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/record")
		})
	}
}
