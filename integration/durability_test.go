package integration

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/ledger"
)

// TestDurabilitySyncSurvivesKill9: with `durability sync` every request
// the client saw complete is in the ledger even when the gateway is
// killed with SIGKILL right after, inside the flush interval that async
// batching would lose.
func TestDurabilitySyncSurvivesKill9(t *testing.T) {
	up := startUpstreams(t, fakes.Options{})
	dir := t.TempDir()
	db := filepath.Join(dir, "ledger.db")
	g := startGateway(t, gatewayConfig{models: up.modelsYAML(), dir: dir, ledgerLine: "ledger sqlite " + db + "\n\t\tdurability sync"})
	const n = 12
	for i := range n {
		path, body := "/v1/chat/completions", `{"model":"oa","messages":[{"role":"user","content":"hi"}]}`
		if i%2 == 1 {
			body = `{"model":"claude","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		}
		if st, _, out := g.do(t, "POST", path, aliceKey, body); st != 200 {
			t.Fatalf("request %d: %d %s", i, st, out)
		}
	}
	if err := g.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-g.done
	s, err := ledger.OpenSQLite(db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	recs, err := s.Query(context.Background(), ledger.Filter{From: time.Now().Add(-time.Hour), To: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d records after kill -9, want all %d", len(recs), n)
	}
	for _, r := range recs {
		if r.Outcome != "ok" || r.OutputTokens == 0 {
			t.Fatalf("record %+v", r)
		}
	}
}
