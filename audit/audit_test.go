package audit

import (
	"context"
	"maps"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/ledger"
)

type fixed struct{ s ledger.ControlStore }

func (f fixed) WaitStore(context.Context) ledger.ControlStore { return f.s }

func TestRecordDropsSecretsAndAppends(t *testing.T) {
	store, err := ledger.OpenSQLite(filepath.Join(t.TempDir(), "l.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	l := &Log{Source: fixed{store.(ledger.ControlStore)}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the request is gone: the entry is still written
	l.Record(ctx, Event{Time: time.Unix(1_800_000_000, 0), Actor: "admin", Action: "key.create", Target: "apikey_1", Source: "10.0.0.1",
		Fields: map[string]string{"name": "ci", "value": "mg-secret", "client_secret": "x", "scim_token": "y", "password": "z"}})
	got, _, err := store.(ledger.AuditStore).QueryAudit(context.Background(), ledger.AuditFilter{})
	if err != nil || len(got) != 1 {
		t.Fatalf("entries %+v, %v", got, err)
	}
	if len(got[0].Fields) != 1 || got[0].Fields["name"] != "ci" || got[0].Actor != "admin" || got[0].Source != "10.0.0.1" {
		t.Errorf("entry %+v", got[0])
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = "[::1]:5000"
	if SourceOf(r) != "::1" {
		t.Errorf("SourceOf = %q", SourceOf(r))
	}
	// No store: nothing happens, nothing panics.
	(&Log{}).Record(context.Background(), Event{Action: "x"})
	var nilLog *Log
	nilLog.Record(context.Background(), Event{Action: "x"})
}

// TestDiff: a changed field at its new value, a removed one as "", an
// unchanged one left out; a creation lists every field.
func TestDiff(t *testing.T) {
	before := map[string]string{"name": "a", "rpm": "5", "models": "echo"}
	after := map[string]string{"name": "b", "rpm": "5", "tpm": "100"}
	if got, want := Diff(before, after), map[string]string{"name": "b", "tpm": "100", "models": ""}; !maps.Equal(got, want) {
		t.Errorf("Diff = %v, want %v", got, want)
	}
	if got := Diff(nil, after); !maps.Equal(got, after) {
		t.Errorf("Diff(nil, after) = %v, want %v", got, after)
	}
	if got := Diff(before, before); got == nil || len(got) != 0 {
		t.Errorf("Diff of no change = %#v, want an empty map", got)
	}
}
