package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func storedResponse(i int, prev string) StoredResponse {
	return StoredResponse{
		ID: fmt.Sprintf("resp_%d", i), KeyID: "alice", PreviousID: prev, Model: "coder",
		Created:  t0.Add(time.Duration(i) * time.Minute),
		Input:    json.RawMessage(fmt.Sprintf(`[{"id":"msg_in%d","type":"message","role":"user","content":"question %d"}]`, i, i)),
		Output:   json.RawMessage(fmt.Sprintf(`[{"id":"msg_out%d","type":"message","role":"assistant","content":[{"type":"output_text","text":"answer %d"}]}]`, i, i)),
		Response: json.RawMessage(fmt.Sprintf(`{"id":"resp_%d","object":"response","status":"completed"}`, i)),
	}
}

// TestResponseStore: what store:true keeps, scoped to the key that made
// it, on both databases.
func TestResponseStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		rs := s.(ResponseStore)
		ctx := context.Background()
		prev := ""
		for i := 1; i <= 3; i++ {
			if err := rs.PutResponse(ctx, storedResponse(i, prev)); err != nil {
				t.Fatal(err)
			}
			prev = fmt.Sprintf("resp_%d", i)
		}
		got, err := rs.GetResponse(ctx, "alice", "resp_2")
		if err != nil || got.PreviousID != "resp_1" || got.Model != "coder" || !got.Created.Equal(t0.Add(2*time.Minute)) ||
			string(got.Response) != `{"id":"resp_2","object":"response","status":"completed"}` || !strings.Contains(string(got.Input), "question 2") {
			t.Fatalf("get: %v %+v", err, got)
		}
		chain, err := rs.ResponseChain(ctx, "alice", "resp_3")
		if err != nil || len(chain) != 3 || chain[0].ID != "resp_1" || chain[2].ID != "resp_3" || !strings.Contains(string(chain[1].Output), "answer 2") {
			t.Fatalf("chain: %v %+v", err, chain)
		}
		for _, id := range []string{"msg_in1", "msg_out3"} {
			if item, err := rs.Item(ctx, "alice", id); err != nil || !strings.Contains(string(item), `"id":"`+id+`"`) {
				t.Errorf("item %s: %v %s", id, err, item)
			}
		}
		// Another key sees none of it.
		if _, err := rs.GetResponse(ctx, "bob", "resp_2"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("bob get: %v", err)
		}
		if _, err := rs.ResponseChain(ctx, "bob", "resp_3"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("bob chain: %v", err)
		}
		if _, err := rs.Item(ctx, "bob", "msg_in1"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("bob item: %v", err)
		}
		if err := rs.DeleteResponse(ctx, "bob", "resp_2"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("bob delete: %v", err)
		}
		// Delete takes the items along; a second delete is a 404.
		if err := rs.DeleteResponse(ctx, "alice", "resp_2"); err != nil {
			t.Fatal(err)
		}
		if _, err := rs.Item(ctx, "alice", "msg_out2"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("item of a deleted response: %v", err)
		}
		if err := rs.DeleteResponse(ctx, "alice", "resp_2"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("second delete: %v", err)
		}
		// An item replayed by a later turn belongs to the later one.
		r4 := storedResponse(4, "")
		r4.Input = json.RawMessage(`[{"id":"msg_in1","type":"message","role":"user","content":"replayed"}]`)
		if err := rs.PutResponse(ctx, r4); err != nil {
			t.Fatal(err)
		}
		if item, _ := rs.Item(ctx, "alice", "msg_in1"); !strings.Contains(string(item), "replayed") {
			t.Errorf("replayed item %s", item)
		}
		// Purge what is older than resp_3.
		n, err := rs.PurgeResponses(ctx, t0.Add(3*time.Minute))
		if err != nil || n != 1 {
			t.Fatalf("purge: %d %v", n, err)
		}
		if _, err := rs.GetResponse(ctx, "alice", "resp_1"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("purged response: %v", err)
		}
		if _, err := rs.GetResponse(ctx, "alice", "resp_3"); err != nil {
			t.Errorf("kept response: %v", err)
		}
		// Too big to keep is an error, not a truncation.
		huge := storedResponse(9, "")
		huge.Response = json.RawMessage(`"` + strings.Repeat("x", MaxStoredResponse) + `"`)
		if err := rs.PutResponse(ctx, huge); err == nil {
			t.Error("a response over the bound was stored")
		}
	})
}

// TestResponseLookupUnstorableID: an id with a NUL byte or invalid UTF-8
// is not found, on PostgreSQL too, where the query itself is refused (it
// answered 503 "database unavailable", which SDKs retry forever).
func TestResponseLookupUnstorableID(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		rs := s.(ResponseStore)
		ctx := context.Background()
		for _, id := range []string{"resp_\x00", "abc\xffdef", "x\x00y"} {
			if _, err := rs.GetResponse(ctx, "alice", id); !errors.Is(err, ErrResponseNotFound) {
				t.Errorf("GetResponse(%q): %v", id, err)
			}
			if err := rs.DeleteResponse(ctx, "alice", id); !errors.Is(err, ErrResponseNotFound) {
				t.Errorf("DeleteResponse(%q): %v", id, err)
			}
			if _, err := rs.ResponseChain(ctx, "alice", id); !errors.Is(err, ErrResponseNotFound) {
				t.Errorf("ResponseChain(%q): %v", id, err)
			}
			if _, err := rs.Item(ctx, "alice", id); !errors.Is(err, ErrResponseNotFound) {
				t.Errorf("Item(%q): %v", id, err)
			}
		}
	})
}

// TestResponseStoreReplace: a background response is stored queued and
// again when it ends; the second put replaces the first, and another
// key's put of the same id changes nothing, on both databases.
func TestResponseStoreReplace(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		rs := s.(ResponseStore)
		ctx := context.Background()
		queued := StoredResponse{ID: "resp_bg", KeyID: "alice", Model: "coder", Created: t0,
			Response: json.RawMessage(`{"id":"resp_bg","status":"queued"}`)}
		if err := rs.PutResponse(ctx, queued); err != nil {
			t.Fatal(err)
		}
		done := storedResponse(9, "")
		done.ID, done.Response = "resp_bg", json.RawMessage(`{"id":"resp_bg","status":"completed"}`)
		if err := rs.PutResponse(ctx, done); err != nil {
			t.Fatal(err)
		}
		got, err := rs.GetResponse(ctx, "alice", "resp_bg")
		if err != nil || string(got.Response) != `{"id":"resp_bg","status":"completed"}` || !strings.Contains(string(got.Output), "answer 9") {
			t.Fatalf("after replace: %v %+v", err, got)
		}
		if item, err := rs.Item(ctx, "alice", "msg_out9"); err != nil || !strings.Contains(string(item), "answer 9") {
			t.Errorf("item of the replacing put: %v %s", err, item)
		}
		bob := queued
		bob.KeyID, bob.Response = "bob", json.RawMessage(`{"id":"resp_bg","status":"cancelled"}`)
		_ = rs.PutResponse(ctx, bob)
		if got, err := rs.GetResponse(ctx, "alice", "resp_bg"); err != nil || string(got.Response) != `{"id":"resp_bg","status":"completed"}` {
			t.Errorf("another key's put changed alice's response: %v %s", err, got.Response)
		}
		if _, err := rs.GetResponse(ctx, "bob", "resp_bg"); !errors.Is(err, ErrResponseNotFound) {
			t.Errorf("bob reads a response by putting its id: %v", err)
		}
	})
}

// TestResponseLease: a background response's lease is stored, renewed by
// its instance, and a lapsed one is replaced only while nobody renewed it
// since it was read; replacing drops the lease. Another key renews
// nothing.
func TestResponseLease(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		rs := s.(ResponseStore)
		ctx := context.Background()
		l1 := t0.Add(15 * time.Second)
		if err := rs.PutResponse(ctx, StoredResponse{ID: "resp_lease", KeyID: "alice", Model: "coder", Created: t0,
			Response: json.RawMessage(`{"status":"in_progress"}`), LeaseUntil: l1}); err != nil {
			t.Fatal(err)
		}
		got, err := rs.GetResponse(ctx, "alice", "resp_lease")
		if err != nil || !got.LeaseUntil.Equal(l1) {
			t.Fatalf("lease read back %v (%v), want %v", got.LeaseUntil, err, l1)
		}
		l2 := l1.Add(5 * time.Second)
		if err := rs.RenewResponse(ctx, "alice", "resp_lease", l2); err != nil {
			t.Fatal(err)
		}
		_ = rs.RenewResponse(ctx, "bob", "resp_lease", l2.Add(time.Hour))
		failed := json.RawMessage(`{"status":"failed"}`)
		if done, err := rs.ReplaceLapsed(ctx, "alice", "resp_lease", l1, failed); err != nil || done {
			t.Fatalf("replaced under a lease renewed since it was read: %v %v", done, err)
		}
		if done, err := rs.ReplaceLapsed(ctx, "alice", "resp_lease", l2, failed); err != nil || !done {
			t.Fatalf("the lapsed lease was not replaced: %v %v", done, err)
		}
		got, err = rs.GetResponse(ctx, "alice", "resp_lease")
		if err != nil || string(got.Response) != string(failed) || !got.LeaseUntil.IsZero() {
			t.Fatalf("after replace: %s lease %v (%v)", got.Response, got.LeaseUntil, err)
		}
		if done, _ := rs.ReplaceLapsed(ctx, "alice", "resp_lease", l2, failed); done {
			t.Error("replaced twice")
		}
		// The sweep finds lapsed leases only, oldest first.
		for i, lease := range []time.Time{t0.Add(3 * time.Second), t0.Add(time.Second), t0.Add(time.Hour)} {
			if err := rs.PutResponse(ctx, StoredResponse{ID: fmt.Sprintf("resp_l%d", i), KeyID: "bob", Created: t0,
				Response: json.RawMessage(`{"status":"in_progress"}`), LeaseUntil: lease}); err != nil {
				t.Fatal(err)
			}
		}
		lapsed, err := rs.LapsedResponses(ctx, t0.Add(time.Minute), 10)
		if err != nil || len(lapsed) != 2 || lapsed[0].ID != "resp_l1" || lapsed[1].ID != "resp_l0" || lapsed[0].KeyID != "bob" ||
			!lapsed[0].LeaseUntil.Equal(t0.Add(time.Second)) || string(lapsed[0].Response) != `{"status":"in_progress"}` {
			t.Errorf("lapsed: %+v %v", lapsed, err)
		}
		if lapsed, _ := rs.LapsedResponses(ctx, t0.Add(time.Minute), 1); len(lapsed) != 1 {
			t.Errorf("limit 1 gave %d", len(lapsed))
		}
	})
}
