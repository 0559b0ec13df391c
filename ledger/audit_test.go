package ledger

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestAuditLogAppendsAndPages(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		as := s.(AuditStore)
		ctx := context.Background()
		for i, a := range []string{"key.create", "key.update", "scim.user.create", "key.create"} {
			if _, err := as.AppendAudit(ctx, AuditEntry{Time: t0.Add(time.Duration(i) * time.Second), Actor: "admin", Action: a,
				Target: "apikey_1", Source: "127.0.0.1", Fields: map[string]string{"name": "ci", "n": string(rune('a' + i))}}); err != nil {
				t.Fatal(err)
			}
		}
		all, more, err := as.QueryAudit(ctx, AuditFilter{})
		if err != nil || more || len(all) != 4 {
			t.Fatalf("all: %d entries, more %v, err %v", len(all), more, err)
		}
		if all[0].Fields["n"] != "d" || all[3].Fields["n"] != "a" || !all[0].Time.Equal(t0.Add(3*time.Second)) {
			t.Fatalf("not newest first: %+v", all)
		}
		page, more, err := as.QueryAudit(ctx, AuditFilter{Limit: 2})
		if err != nil || !more || len(page) != 2 {
			t.Fatalf("page 1: %d, more %v, err %v", len(page), more, err)
		}
		page2, more, err := as.QueryAudit(ctx, AuditFilter{Limit: 2, Before: page[1].ID})
		if err != nil || more || len(page2) != 2 || page2[0].ID != all[2].ID {
			t.Fatalf("page 2: %+v, more %v, err %v", page2, more, err)
		}
		creates, _, err := as.QueryAudit(ctx, AuditFilter{Action: "key.create", From: t0.Add(time.Second)})
		if err != nil || len(creates) != 1 || creates[0].Fields["n"] != "d" {
			t.Fatalf("filtered: %+v, err %v", creates, err)
		}
	})
}

func TestSCIMStore(t *testing.T) {
	forEachStore(t, func(t *testing.T, s Store) {
		ss := s.(SCIMStore)
		ctx := context.Background()
		u := SCIMUser{ID: "u1", UserName: "Ada@example.com", ExternalID: "00u1", Doc: []byte(`{"userName":"Ada@example.com"}`), Updated: t0}
		if err := ss.PutSCIMUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		if err := ss.PutSCIMUser(ctx, SCIMUser{ID: "u2", UserName: "ada@EXAMPLE.com", Doc: []byte(`{}`), Updated: t0}); !errors.Is(err, ErrSCIMConflict) {
			t.Fatalf("duplicate userName: %v", err)
		}
		u.Doc = []byte(`{"userName":"Ada@example.com","active":false}`)
		if err := ss.PutSCIMUser(ctx, u); err != nil {
			t.Fatal(err)
		}
		got, err := ss.SCIMUser(ctx, "u1")
		if err != nil || string(got.Doc) != string(u.Doc) || got.ExternalID != "00u1" {
			t.Fatalf("got %+v, %v", got, err)
		}
		if err := ss.DeleteSCIMUser(ctx, "u1"); err != nil {
			t.Fatal(err)
		}
		if _, err := ss.SCIMUser(ctx, "u1"); !errors.Is(err, ErrSCIMNotFound) {
			t.Fatalf("deleted user: %v", err)
		}
		if err := ss.PutSCIMGroup(ctx, SCIMGroup{ID: "g1", DisplayName: "eng", Doc: []byte(`{"displayName":"eng"}`), Updated: t0}); err != nil {
			t.Fatal(err)
		}
		gs, err := ss.SCIMGroups(ctx)
		if err != nil || len(gs) != 1 || gs[0].DisplayName != "eng" {
			t.Fatalf("groups %+v, %v", gs, err)
		}
		if err := ss.DeleteSCIMGroup(ctx, "g2"); !errors.Is(err, ErrSCIMNotFound) {
			t.Fatalf("delete missing group: %v", err)
		}
	})
}
