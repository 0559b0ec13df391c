package ledger

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// TestBatchPassthroughSettlesOnce: a passed-through batch's items are
// never claimed by a worker and keep it open; of two instances settling
// it at once (each after taking the lease in turn), exactly one writes
// its records, ends its items and batch, and ends its budget hold.
func TestBatchPassthroughSettlesOnce(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ps := s.(BatchPassthroughStore)
		bs := s.(BatchStore)
		ctx := context.Background()
		b, items := batchFixture("msgbatch_p", 3, t0)
		p := BatchPassthrough{BatchID: b.ID, Site: b.Site, KeyID: b.KeyID, Provider: "anthropic", Upstream: "anthropic https://x fp",
			ProviderBatchID: "msgbatch_up", Models: json.RawMessage(`{}`), HoldTicket: 77, HoldPico: 1000, Status: "in_progress", Polled: t0}
		if err := ps.CreatePassthroughBatch(ctx, b, items, p); err != nil {
			t.Fatal(err)
		}
		if claimed, err := bs.ClaimBatchItems(ctx, "site-a", "w", t0.Add(time.Second), t0.Add(time.Minute), 10); err != nil || len(claimed) != 0 {
			t.Fatalf("a worker claimed %d items at the provider: %v", len(claimed), err)
		}
		if done, err := bs.ExpireBatches(ctx, t0.Add(time.Second)); err != nil || len(done) != 0 {
			t.Fatalf("a batch at the provider was taken as done: %v %v", done, err)
		}
		if got, err := bs.GetBatch(ctx, alice, b.ID); err != nil || got.Counts.Running != 3 {
			t.Fatalf("counts %+v %v", got.Counts, err)
		}
		if open, err := ps.OpenPassthroughs(ctx, "site-a"); err != nil || len(open) != 1 || open[0].HoldTicket != 77 || open[0].KeyID != "alice" {
			t.Fatalf("open: %+v %v", open, err)
		}
		ended := make([]BatchItem, len(items))
		for i, it := range items {
			ended[i] = BatchItem{ID: it.ID, State: ItemSucceeded, StatusCode: 200, Result: []byte(`{"model":"alias"}`)}
		}
		rec := Record{Time: t0, RequestID: "r", KeyID: "alice", Alias: "alias", Endpoint: EndpointBatch, Status: 200, Outcome: OutcomeOK, CostPicoUSD: 5, ServiceTier: "batch"}
		var wins int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, owner := range []string{"i1", "i2"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for try := 0; try < 2; try++ {
					now := t0.Add(time.Duration(try) * time.Hour)
					if ok, err := ps.LeasePassthrough(ctx, b.ID, owner, now, now.Add(time.Minute)); err != nil || !ok {
						continue
					}
					ok, err := ps.SettlePassthrough(ctx, b.ID, owner, ended, []Record{rec, rec, rec}, nil, now)
					if err != nil {
						t.Error(err)
					}
					if ok {
						mu.Lock()
						wins++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		if wins != 1 {
			t.Fatalf("settled %d times", wins)
		}
		got, err := bs.GetBatch(ctx, alice, b.ID)
		if err != nil || got.Ended.IsZero() || got.Counts.Succeeded != 3 {
			t.Fatalf("after settlement: %+v %v", got, err)
		}
		recs, err := s.Query(ctx, Filter{From: t0.Add(-time.Hour), To: t0.Add(time.Hour)})
		if err != nil || len(recs) != 3 {
			t.Fatalf("%d records: %v", len(recs), err)
		}
		if open, _ := ps.OpenPassthroughs(ctx, "site-a"); len(open) != 0 {
			t.Fatalf("still open: %+v", open)
		}
	})
}

// TestBatchFileChunks: a file read in pieces is its content whole, never
// cut inside a UTF-8 sequence; a missing file is ErrBatchFileNotFound.
func TestBatchFileChunks(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		fs := s.(BatchFileStreamer)
		ctx := context.Background()
		content := strings.Repeat("ascii é 😀 ", 5000)
		f := BatchFile{ID: "file-big", Site: "site-a", KeyID: "alice", Purpose: "batch", Filename: "x", Created: t0, Expires: t0.Add(time.Hour), Content: []byte(content)}
		if err := s.(BatchStore).PutBatchFile(ctx, f); err != nil {
			t.Fatal(err)
		}
		var got []byte
		pieces := 0
		if err := fs.BatchFileChunks(ctx, alice, f.ID, 1000, func(b []byte) error {
			if !utf8.Valid(b) {
				t.Fatalf("piece %d cut a character", pieces)
			}
			pieces++
			got = append(got, b...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if string(got) != content || pieces < 40 {
			t.Fatalf("%d pieces, %d of %d bytes", pieces, len(got), len(content))
		}
		if err := fs.BatchFileChunks(ctx, BatchOwner{Site: "site-a", KeyID: "bob"}, f.ID, 1000, func([]byte) error { return nil }); err != ErrBatchFileNotFound {
			t.Fatalf("another key's file: %v", err)
		}
	})
}
