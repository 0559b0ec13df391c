package upstreamauth

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/audit"
	"github.com/modelgate/modelgate/internal/fakes"
	"github.com/modelgate/modelgate/internal/testclock"
	"github.com/modelgate/modelgate/internal/testwait"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// auditLog keeps the audit events a broker records.
type auditLog struct{ events []audit.Event }

func (a *auditLog) Record(_ context.Context, e audit.Event) { a.events = append(a.events, e) }

// TestDisconnectRevokesAtAuthorizationServer: a person's disconnect
// deletes the grant and revokes its refresh and access tokens at the
// authorization server's RFC 7009 revocation_endpoint, as the client they
// were issued to; the token stops working there; the audit entry says
// it was revoked and holds no token. A confidential client authenticates
// with HTTP Basic.
func TestDisconnectRevokesAtAuthorizationServer(t *testing.T) {
	for _, confidential := range []bool{false, true} {
		as := fakes.NewOAuthServer(resource)
		defer as.Close()
		st, _ := sqliteStore(t)
		c := testclock.New(time.Now())
		var client []string
		if confidential {
			as.AddClient("modelgate", "s3cret", testPublic+Path+"callback/gh")
			client = []string{"modelgate", "s3cret"}
		}
		b := newBroker(t, as, st, c, client...)
		log := &auditLog{}
		b.opts.Audit = log
		bob := &policy.Identity{KeyID: "bob", Person: "bob", Subject: "https://idp.example 00u-bob"}
		connectAs(t, b, bob, "bob-at-gh")
		tok, err := b.Token(context.Background(), "gh", Unit(bob), "")
		if err != nil {
			t.Fatal(err)
		}
		if w := serveAs(b, http.MethodPost, Path+"disconnect/gh", "", bob); w.Code != http.StatusOK {
			t.Fatalf("disconnect: %d %s", w.Code, w.Body)
		}
		revoked := as.Revoked()
		if len(revoked) != 2 || !strings.Contains(revoked[0], " refresh_token rt-") || !strings.HasSuffix(revoked[1], " access_token "+tok) {
			t.Fatalf("revocations (confidential %v): %q", confidential, revoked)
		}
		if confidential && !strings.HasPrefix(revoked[0], "modelgate ") {
			t.Fatalf("the confidential client did not authenticate: %q", revoked[0])
		}
		if _, ok := as.Who(tok); ok {
			t.Fatal("the access token still works at the authorization server")
		}
		var nc *NotConnectedError
		if _, err := b.Token(context.Background(), "gh", Unit(bob), ""); !errors.As(err, &nc) {
			t.Fatalf("after the disconnect: %v", err)
		}
		last := log.events[len(log.events)-1]
		if last.Action != "mcp.upstream.disconnected" || last.Fields["revocation"] != "revoked" {
			t.Fatalf("audit: %+v", last)
		}
		for _, e := range log.events {
			for _, v := range e.Fields {
				if strings.Contains(v, tok) || strings.Contains(v, "rt-") {
					t.Fatalf("a token in the audit log: %+v", e)
				}
			}
		}
	}
}

// TestRevocationBestEffort: an authorization server without
// revocation_endpoint, or one that does not answer in time, does not
// stop a disconnect: the grant is gone from the ledger within the bound,
// and the audit entry says what happened.
func TestRevocationBestEffort(t *testing.T) {
	as, st, _, b := fixture(t)
	b.revokeWithin = 300 * time.Millisecond
	log := &auditLog{}
	b.opts.Audit = log
	for _, tc := range []struct {
		slow bool
		want string
	}{{false, "not offered"}, {true, "failed"}} {
		as.SetRevocation(tc.slow, tc.slow)
		bob := &policy.Identity{KeyID: "bob", Person: "bob"}
		connectAs(t, b, bob, "bob-at-gh")
		began := time.Now()
		if w := serveAs(b, http.MethodPost, Path+"disconnect/gh", "", bob); w.Code != http.StatusOK {
			t.Fatalf("disconnect: %d %s", w.Code, w.Body)
		}
		if took := time.Since(began); took > b.revokeWithin+2*time.Second {
			t.Fatalf("the disconnect took %v", took)
		}
		if rows, _ := st.MCPUpstreamTokensOf(context.Background(), "p:bob"); len(rows) != 0 {
			t.Fatalf("grant kept: %+v", rows)
		}
		if last := log.events[len(log.events)-1]; last.Fields["revocation"] != tc.want {
			t.Fatalf("audit with slow=%v: %+v", tc.slow, last)
		}
	}
	if n := len(as.Revoked()); n != 0 {
		t.Fatalf("%d revocations completed", n)
	}
}

// TestGrantsEndedWithHolderRevoked: a shared key's grant deleted because
// the key was revoked, and a person's deleted because SCIM deprovisioned
// them, are revoked at the authorization server too (by the instance
// whose ledger deleted them); another broker's rows are left alone.
func TestGrantsEndedWithHolderRevoked(t *testing.T) {
	as, st, c, b := fixture(t)
	b.Watch(st.(ledger.Store))
	defer b.Close()
	admin := &policy.Identity{KeyID: "root", Person: "root", Role: policy.RoleAdmin, Subject: "https://idp.example 00u-root"}
	cb := authorize(t, startAs(t, b, strings.TrimPrefix(b.Link("gh", "k:ci"), testPublic), admin), "root-at-gh")
	if w := serveAs(b, http.MethodGet, cb, "", admin); w.Code != http.StatusOK {
		t.Fatalf("connecting key ci: %d %s", w.Code, w.Body)
	}
	dana := &policy.Identity{KeyID: "dana@example.com", Person: "dana@example.com", Subject: "https://idp.example 00u-dana"}
	connectAs(t, b, dana, "dana-at-gh")
	keyTok, err := b.Token(context.Background(), "gh", "k:ci", "")
	if err != nil {
		t.Fatal(err)
	}
	danaTok, err := b.Token(context.Background(), "gh", Unit(dana), "")
	if err != nil {
		t.Fatal(err)
	}

	cs := st.(ledger.ControlStore)
	now := c.Now()
	if err := cs.PutKey(context.Background(), ledger.ControlKey{ID: "ci", SecretHash: "h-ci", Status: "active", CreatedAt: now, UpdatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.UpdateKey(context.Background(), "ci", func(k *ledger.ControlKey) error { k.Status = "inactive"; return nil }); err != nil {
		t.Fatal(err)
	}
	if !testwait.Until(func() bool { _, ok := as.Who(keyTok); return !ok && len(as.Revoked()) == 2 }) {
		t.Fatalf("the revoked key's grant was not revoked upstream: %q", as.Revoked())
	}
	if _, err := st.DeleteMCPUpstreamTokensOfPerson(context.Background(), "dana@example.com", "00u-dana"); err != nil {
		t.Fatal(err)
	}
	if !testwait.Until(func() bool { _, ok := as.Who(danaTok); return !ok && len(as.Revoked()) == 4 }) {
		t.Fatalf("the deprovisioned person's grant was not revoked upstream: %q", as.Revoked())
	}

	// A closed broker (replaced by a reload) is told nothing more.
	b.Close()
	connectAs(t, b, dana, "dana-at-gh")
	if _, err := st.DeleteMCPUpstreamTokensOfPerson(context.Background(), "dana@example.com", "00u-dana"); err != nil {
		t.Fatal(err)
	}
	if n := len(as.Revoked()); n != 4 {
		t.Fatalf("a closed broker revoked: %d", n)
	}
}

// TestEndedRevocationsBounded: the revocations of grants ended with their
// holder take a slot of the broker's bound; with every slot taken, Ended
// still returns at once, and the revocation waits for a slot rather than
// opening another connection.
func TestEndedRevocationsBounded(t *testing.T) {
	as, st, _, b := fixture(t)
	dana := &policy.Identity{KeyID: "dana@example.com", Person: "dana@example.com", Subject: "https://idp.example 00u-dana"}
	connectAs(t, b, dana, "dana-at-gh")
	rows, err := st.MCPUpstreamTokensOf(context.Background(), Unit(dana))
	if err != nil || len(rows) != 1 {
		t.Fatalf("grants: %+v %v", rows, err)
	}
	for range revokeParallel {
		b.revoking <- struct{}{}
	}
	b.Ended(rows)
	if n := len(as.Revoked()); n != 0 {
		t.Fatalf("%d revocations ran with every slot taken", n)
	}
	for range revokeParallel {
		<-b.revoking
	}
	if !testwait.Until(func() bool { return len(as.Revoked()) == 2 }) {
		t.Fatalf("the ended grant was not revoked once a slot was free: %q", as.Revoked())
	}
}
