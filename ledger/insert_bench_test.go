package ledger

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkSQLiteInsertBatch measures one writer batch (256 records, the
// default batch size) going into SQLite: the ledger's main CPU cost on a
// busy gateway.
func BenchmarkSQLiteInsertBatch(b *testing.B) {
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
	}
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := s.Insert(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
}
