package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// alice is the fixtures' owner: key alice of site-a.
var alice = BatchOwner{Site: "site-a", KeyID: "alice"}

func batchFixture(id string, n int, created time.Time) (Batch, []BatchItem) {
	b := Batch{ID: id, Site: "site-a", KeyID: "alice", API: "anthropic", Endpoint: "/v1/messages", Created: created,
		Expires: created.Add(24 * time.Hour), OutputFileID: "file-out-" + id, ErrorFileID: "file-err-" + id}
	items := make([]BatchItem, n)
	for i := range items {
		items[i] = BatchItem{ID: fmt.Sprintf("%s-%d", id, i), Seq: int64(i), CustomID: fmt.Sprintf("c%d", i), Body: []byte(`{"model":"m"}`)}
	}
	return b, items
}

// TestBatchStoreLifecycle: items are claimed once each even by
// concurrent claimers, a lapsed lease is claimed again, cancel ends the
// pending items, a batch ends once, and retention purges it.
func TestBatchStoreLifecycle(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		bs := s.(BatchStore)
		ctx := context.Background()
		b, items := batchFixture("msgbatch_a", 1200, t0)
		if err := bs.CreateBatch(ctx, b, items); err != nil {
			t.Fatal(err)
		}
		if _, err := bs.GetBatch(ctx, BatchOwner{Site: "site-a", KeyID: "bob"}, b.ID); !errors.Is(err, ErrBatchNotFound) {
			t.Fatalf("another key's batch: %v", err)
		}
		got, err := bs.GetBatch(ctx, alice, b.ID)
		if err != nil || got.Counts.Pending != 1200 || got.Total != 1200 {
			t.Fatalf("get: %+v %v", got, err)
		}
		// A claim takes at most what it asks for.
		if one, err := bs.ClaimBatchItems(ctx, "site-a", "w0", t0.Add(time.Second), t0.Add(time.Minute), 2); err != nil || len(one) != 2 {
			t.Fatalf("a claim of 2 took %d: %v", len(one), err)
		} else {
			for _, it := range one {
				_ = bs.ReleaseBatchItem(ctx, "w0", it.ID, t0)
			}
		}
		// Four claimers at once take every item exactly once.
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					claimed, err := bs.ClaimBatchItems(ctx, "site-a", fmt.Sprint("w", w), t0.Add(time.Second), t0.Add(time.Minute), 100)
					if err != nil {
						t.Error(err)
						return
					}
					if len(claimed) == 0 {
						return
					}
					if len(claimed) > 100 {
						t.Errorf("one claim of at most 100 took %d items", len(claimed))
					}
					mu.Lock()
					for _, it := range claimed {
						seen[it.ID]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(seen) != 1200 {
			t.Fatalf("claimed %d distinct items, want 1200", len(seen))
		}
		for id, n := range seen {
			if n != 1 {
				t.Fatalf("item %s claimed %d times", id, n)
			}
		}
		// Nothing is runnable while the leases hold; after they lapse,
		// another owner takes them.
		if c, _ := bs.ClaimBatchItems(ctx, "site-a", "late", t0.Add(30*time.Second), t0.Add(time.Hour), 10); len(c) != 0 {
			t.Fatalf("claimed %d leased items", len(c))
		}
		c, err := bs.ClaimBatchItems(ctx, "site-a", "late", t0.Add(2*time.Minute), t0.Add(time.Hour), 2)
		if err != nil || len(c) != 2 {
			t.Fatalf("lapsed claim: %d %v", len(c), err)
		}
		// The old owner's finish no longer counts; the new owner's does.
		if err := bs.FinishBatchItem(ctx, "w0", BatchItem{ID: c[0].ID, State: ItemSucceeded, StatusCode: 200, Result: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if err := bs.FinishBatchItem(ctx, "late", BatchItem{ID: c[0].ID, State: ItemSucceeded, StatusCode: 200, Result: []byte(`{"ok":1}`)}); err != nil {
			t.Fatal(err)
		}
		if err := bs.ReleaseBatchItem(ctx, "late", c[1].ID, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		got, _ = bs.CancelBatch(ctx, alice, b.ID, t0.Add(3*time.Minute))
		if got.Cancelled.IsZero() || got.Counts.Canceled != 1 || got.Counts.Succeeded != 1 || got.Counts.Running != 1198 {
			t.Fatalf("after cancel: %+v", got)
		}
		if err := bs.DeleteBatch(ctx, alice, b.ID); !errors.Is(err, ErrBatchRunning) {
			t.Fatalf("delete while running: %v", err)
		}
		// Expiry ends what was still running once the leases lapse and
		// nothing claims it: here every running item finishes errored.
		for _, id := range keysOf(seen) {
			if id == c[0].ID || id == c[1].ID {
				continue
			}
			for w := range 4 {
				_ = bs.FinishBatchItem(ctx, fmt.Sprint("w", w), BatchItem{ID: id, State: ItemErrored, StatusCode: 500, Result: []byte(`{}`)})
			}
		}
		done, err := bs.ExpireBatches(ctx, t0.Add(4*time.Minute))
		if err != nil || len(done) != 1 || done[0].ID != b.ID {
			t.Fatalf("ended batches: %+v %v", done, err)
		}
		out := BatchFile{ID: b.OutputFileID, Site: "site-a", KeyID: "alice", Purpose: "batch_output", Filename: "out.jsonl", Created: t0, Expires: t0.Add(48 * time.Hour), Content: []byte("x\n")}
		if ok, err := bs.EndBatch(ctx, b.ID, t0.Add(5*time.Minute), []BatchFile{out}); !ok || err != nil {
			t.Fatalf("end: %v %v", ok, err)
		}
		if ok, err := bs.EndBatch(ctx, b.ID, t0.Add(6*time.Minute), []BatchFile{out}); ok || err != nil {
			t.Fatalf("second end: %v %v", ok, err)
		}
		f, err := bs.BatchFileContent(ctx, alice, b.OutputFileID)
		if err != nil || string(f.Content) != "x\n" || f.Bytes != 2 {
			t.Fatalf("output file: %+v %v", f, err)
		}
		its, err := bs.BatchItems(ctx, b.ID)
		if err != nil || len(its) != 1200 || its[0].Seq != 0 {
			t.Fatalf("items: %d %v", len(its), err)
		}
		if n, err := bs.PurgeBatches(ctx, t0.Add(time.Minute), t0.Add(time.Hour)); err != nil || n != 0 {
			t.Fatalf("purge before the end: %d %v", n, err)
		}
		if n, err := bs.PurgeBatches(ctx, t0.Add(time.Hour), t0.Add(72*time.Hour)); err != nil || n != 1 {
			t.Fatalf("purge: %d %v", n, err)
		}
		if _, err := bs.GetBatchFile(ctx, alice, b.OutputFileID); !errors.Is(err, ErrBatchFileNotFound) {
			t.Fatalf("file after purge: %v", err)
		}
	})
}

// TestBatchStoreExpiryAndList: pending items of an expired batch end
// expired; lists page newest first in both directions.
func TestBatchStoreExpiryAndList(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		bs := s.(BatchStore)
		ctx := context.Background()
		for i := range 3 {
			b, items := batchFixture(fmt.Sprint("msgbatch_", i), 2, t0.Add(time.Duration(i)*time.Second))
			if err := bs.CreateBatch(ctx, b, items); err != nil {
				t.Fatal(err)
			}
		}
		page, err := bs.ListBatches(ctx, alice, "anthropic", "", "", 2)
		if err != nil || len(page) != 2 || page[0].ID != "msgbatch_2" || page[1].ID != "msgbatch_1" {
			t.Fatalf("first page: %+v %v", page, err)
		}
		next, _ := bs.ListBatches(ctx, alice, "anthropic", "msgbatch_1", "", 2)
		if len(next) != 1 || next[0].ID != "msgbatch_0" {
			t.Fatalf("after: %+v", next)
		}
		prev, _ := bs.ListBatches(ctx, alice, "anthropic", "", "msgbatch_0", 1)
		if len(prev) != 1 || prev[0].ID != "msgbatch_1" {
			t.Fatalf("before: %+v", prev)
		}
		if other, _ := bs.ListBatches(ctx, alice, "openai", "", "", 10); len(other) != 0 {
			t.Fatalf("openai list holds %d anthropic batches", len(other))
		}
		done, err := bs.ExpireBatches(ctx, t0.Add(25*time.Hour))
		if err != nil || len(done) != 3 {
			t.Fatalf("expired: %d %v", len(done), err)
		}
		got, _ := bs.GetBatch(ctx, alice, "msgbatch_0")
		if got.Counts.Expired != 2 {
			t.Fatalf("counts: %+v", got.Counts)
		}
	})
}

func keysOf(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBatchClaimsShareTheWorkers: a batch created after a large one is
// not queued behind its tail: claims take items by their place in their
// batch, so both batches' first items come first.
func TestBatchClaimsShareTheWorkers(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		bs := s.(BatchStore)
		ctx := context.Background()
		big, bigItems := batchFixture("big", 50, t0)
		small, smallItems := batchFixture("small", 2, t0.Add(time.Minute))
		if err := bs.CreateBatch(ctx, big, bigItems); err != nil {
			t.Fatal(err)
		}
		if err := bs.CreateBatch(ctx, small, smallItems); err != nil {
			t.Fatal(err)
		}
		got, err := bs.ClaimBatchItems(ctx, "site-a", "w", t0.Add(time.Hour), t0.Add(2*time.Hour), 4)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, it := range got {
			ids = append(ids, it.ID)
		}
		slices.Sort(ids)
		if want := []string{"big-0", "big-1", "small-0", "small-1"}; !slices.Equal(ids, want) {
			t.Fatalf("claimed %v, want %v", ids, want)
		}
	})
}

// TestBatchStoreSiteScope: a key id is unique only within a site, so two
// sites' keys of one id see only their own batches and files, and a
// site's claim takes only its own items, each carrying its site.
func TestBatchStoreSiteScope(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		bs := s.(BatchStore)
		ctx := context.Background()
		a, aItems := batchFixture("msgbatch_siteA", 3, t0)
		b, bItems := batchFixture("msgbatch_siteB", 3, t0)
		b.Site = "site-b"
		for _, c := range []struct {
			b     Batch
			items []BatchItem
		}{{a, aItems}, {b, bItems}} {
			if err := bs.CreateBatch(ctx, c.b, c.items); err != nil {
				t.Fatal(err)
			}
			f := BatchFile{ID: "file-in-" + c.b.Site, Site: c.b.Site, KeyID: "alice", Purpose: "batch", Filename: "in.jsonl",
				Created: t0, Expires: t0.Add(time.Hour), Content: []byte(c.b.Site + " private\n")}
			if err := bs.PutBatchFile(ctx, f); err != nil {
				t.Fatal(err)
			}
		}
		aliceB := BatchOwner{Site: "site-b", KeyID: "alice"}
		if _, err := bs.GetBatch(ctx, aliceB, a.ID); !errors.Is(err, ErrBatchNotFound) {
			t.Fatalf("site-b's alice reads site-a's batch: %v", err)
		}
		if _, err := bs.BatchFileContent(ctx, aliceB, "file-in-site-a"); !errors.Is(err, ErrBatchFileNotFound) {
			t.Fatalf("site-b's alice reads site-a's file: %v", err)
		}
		if err := bs.DeleteBatchFile(ctx, aliceB, "file-in-site-a"); !errors.Is(err, ErrBatchFileNotFound) {
			t.Fatalf("site-b's alice deletes site-a's file: %v", err)
		}
		if _, err := bs.CancelBatch(ctx, aliceB, a.ID, t0); !errors.Is(err, ErrBatchNotFound) {
			t.Fatalf("site-b's alice cancels site-a's batch: %v", err)
		}
		if l, err := bs.ListBatches(ctx, aliceB, "anthropic", "", "", 10); err != nil || len(l) != 1 || l[0].ID != b.ID || l[0].Site != "site-b" {
			t.Fatalf("site-b's list: %+v %v", l, err)
		}
		if l, err := bs.ListBatchFiles(ctx, alice, "", "", 10); err != nil || len(l) != 1 || l[0].ID != "file-in-site-a" {
			t.Fatalf("site-a's files: %+v %v", l, err)
		}
		got, err := bs.ClaimBatchItems(ctx, "site-b", "wb", t0.Add(time.Second), t0.Add(time.Minute), 10)
		if err != nil || len(got) != 3 {
			t.Fatalf("site-b claimed %d: %v", len(got), err)
		}
		for _, it := range got {
			if it.BatchID != b.ID || it.Site != "site-b" || it.KeyID != "alice" {
				t.Fatalf("site-b claimed %+v", it)
			}
		}
		if again, _ := bs.ClaimBatchItems(ctx, "site-b", "wb", t0.Add(time.Second), t0.Add(time.Minute), 10); len(again) != 0 {
			t.Fatalf("site-b claimed site-a's items: %d", len(again))
		}
	})
}
