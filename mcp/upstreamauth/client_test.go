package upstreamauth

import (
	"context"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/modellist"
	"github.com/modelgate/modelgate/policy"
)

// TestRegisteredClientKeptInLedger: the client the gateway registers
// (RFC 7591) is kept in the ledger, one per (server, authorization
// server): instances starting connects at once all use one client, a
// restarted instance registers nothing, and a grant issued through one
// instance renews through another with the client it was issued to.
// Another public_url (another redirect URI) gets a client of its own.
func TestRegisteredClientKeptInLedger(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		st, _ := sqliteStore(t)
		testRegisteredClientKept(t, func() ledger.MCPUpstreamTokenStore { return st })
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgtest.FreshSchema(t)
		testRegisteredClientKept(t, func() ledger.MCPUpstreamTokenStore { return pgTokenStore(t, dsn) })
	})
}

func testRegisteredClientKept(t *testing.T, open func() ledger.MCPUpstreamTokenStore) {
	as := fakes.NewOAuthServer(resource)
	defer as.Close()
	c := testclock.New(time.Now())
	// Four instances, each with its own database connection, start a
	// connect at the same moment.
	var instances []*Broker
	for range 4 {
		instances = append(instances, newBroker(t, as, open(), c))
	}
	ids := make([]string, len(instances))
	var wg sync.WaitGroup
	for i, b := range instances {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := link{Server: "gh", Unit: "p:bob", Expires: c.Now().Add(linkTTL), Nonce: randomID()}
			to, err := b.start(context.Background(), l)
			if err != nil {
				t.Error(err)
				return
			}
			u, _ := url.Parse(to)
			ids[i] = u.Query().Get("client_id")
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("instances use different clients: %q", ids)
		}
	}
	registered := as.Registrations()
	if registered < 1 || registered > len(instances) {
		t.Fatalf("%d registrations", registered)
	}

	// Bob connects through the first instance; a restarted instance
	// (a new process: nothing in memory) registers nothing, connects
	// alice with the same client, and renews bob's grant.
	connect(t, instances[0], "bob", "bob-at-gh")
	restarted := newBroker(t, as, open(), c)
	connect(t, restarted, "alice", "alice-at-gh")
	if n := as.Registrations(); n != registered {
		t.Fatalf("a restart registered again: %d registrations, was %d", n, registered)
	}
	c.Advance(2 * time.Hour)
	tok, err := restarted.Token(context.Background(), "gh", "p:bob", "")
	if who, ok := as.Who(tok); err != nil || !ok || who != "bob-at-gh" {
		t.Fatalf("bob's grant renewed on the restarted instance: %q %v", who, err)
	}

	// Another public_url is another redirect URI: its own client.
	other, err := New(Options{
		Servers: []*modellist.MCPServer{{Name: "gh", URL: resource, Auth: modellist.MCPAuthOAuth, OAuth: &modellist.MCPOAuth{AuthorizationServer: as.URL}}},
		Key:     testKey, PublicURL: "https://other-gw.example", Now: c.Now,
		Store: open,
	})
	if err != nil {
		t.Fatal(err)
	}
	to, err := other.start(context.Background(), link{Server: "gh", Unit: "p:carol", Expires: c.Now().Add(linkTTL), Nonce: randomID()})
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(to)
	if u.Query().Get("client_id") == ids[0] || as.Registrations() != registered+1 {
		t.Fatalf("another redirect URI reused the client: %q, %d registrations", u.Query().Get("client_id"), as.Registrations())
	}
	// No person's listing shows the client's row.
	if conns, err := restarted.Connections(context.Background(), Unit(&policy.Identity{Person: "carol"})); err != nil || conns[0].Connected {
		t.Fatalf("carol's connections: %+v %v", conns, err)
	}
}
