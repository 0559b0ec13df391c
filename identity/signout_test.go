package identity

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelgate/modelgate/internal/pgtest"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// ledgerOpeners open one ledger database again and again, as gateway
// instances (and a restarted one) do.
func ledgerOpeners(t *testing.T) map[string]func(t *testing.T) func() ledger.ControlStore {
	return map[string]func(t *testing.T) func() ledger.ControlStore{
		"sqlite": func(t *testing.T) func() ledger.ControlStore {
			path := filepath.Join(t.TempDir(), "ledger.db")
			return func() ledger.ControlStore {
				s, err := ledger.OpenSQLite(path)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s.(ledger.ControlStore)
			}
		},
		"postgres": func(t *testing.T) func() ledger.ControlStore {
			dsn := pgtest.FreshSchema(t) // skips without a server
			return func() ledger.ControlStore {
				s, err := ledger.OpenPostgres(context.Background(), dsn)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s.(ledger.ControlStore)
			}
		},
	}
}

// instance is one gateway's relying party over the shared ledger, its
// control poll running as the app runs it.
func instance(t *testing.T, cfg Config, store ledger.ControlStore, poll bool) (*Handler, *policy.Controls) {
	t.Helper()
	c := policy.NewControls(nil)
	c.SetStore(store)
	if poll {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		go c.Poll(ctx, time.Second, nil)
	}
	h, err := New(cfg, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return h, c
}

// me asks h for GET /v1/me with the session cookie, as the dashboard does.
func me(h *Handler, cookie string) int {
	r := httptest.NewRequest(http.MethodGet, MePath, nil)
	r.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
	w := httptest.NewRecorder()
	if _, handled := h.Authenticate(w, r); !handled {
		return 0
	}
	return w.Code
}

// TestSignOutEverywhere: a session signed out on instance A is refused
// by instance B within its control poll (~1 s, bounded here at 3 s), and
// by an instance started afterwards on the same ledger, which answers 503
// (not 200) until it has read the sign-outs.
func TestSignOutEverywhere(t *testing.T) {
	// A loopback issuer nobody listens on: sign-out's look at the
	// provider's end_session_endpoint fails at once.
	cfg := Config{Issuer: "http://127.0.0.1:1", ClientID: "gw", ClientSecret: "shared-secret"}
	for name, opener := range ledgerOpeners(t) {
		t.Run(name, func(t *testing.T) {
			open := opener(t)
			a, _ := instance(t, cfg, open(), true)
			b, _ := instance(t, cfg, open(), true)
			s := session{ID: randomID(), Person: Person{Subject: "alice", Email: "alice@example.com", Groups: []string{}},
				Expires: time.Now().Add(time.Hour)}
			cookie, err := a.seal.seal(sessionCookie, s)
			if err != nil {
				t.Fatal(err)
			}
			other, _ := a.seal.seal(sessionCookie, session{ID: randomID(), Person: s.Person, Expires: s.Expires})
			deadline := time.Now().Add(5 * time.Second)
			for me(b, cookie) != http.StatusOK || me(a, cookie) != http.StatusOK {
				if time.Now().After(deadline) {
					t.Fatalf("the session is not accepted before sign-out: A %d, B %d", me(a, cookie), me(b, cookie))
				}
				time.Sleep(20 * time.Millisecond)
			}

			r := httptest.NewRequest(http.MethodPost, LogoutPath, nil)
			r.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookie})
			r.Header.Set("X-CSRF-Token", a.seal.csrf(s.ID))
			w := httptest.NewRecorder()
			a.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				t.Fatalf("sign-out on A: %d %s", w.Code, w.Body)
			}
			signedOut := time.Now()
			if got := me(a, cookie); got != http.StatusUnauthorized {
				t.Errorf("A after its own sign-out: %d, want 401", got)
			}
			for me(b, cookie) != http.StatusUnauthorized {
				if time.Since(signedOut) > 3*time.Second {
					t.Fatalf("B still accepts the signed-out session %v after the sign-out on A", time.Since(signedOut))
				}
				time.Sleep(20 * time.Millisecond)
			}
			t.Logf("B refused the session %v after the sign-out on A", time.Since(signedOut).Round(time.Millisecond))
			if got := me(b, other); got != http.StatusOK {
				t.Errorf("another session of the same person on B: %d, want 200 (only the signed-out session ends)", got)
			}

			restarted, rc := instance(t, cfg, open(), false)
			if got := me(restarted, cookie); got != http.StatusServiceUnavailable {
				t.Errorf("a restarted instance before reading its ledger: %d, want 503", got)
			}
			if err := rc.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := me(restarted, cookie); got != http.StatusUnauthorized {
				t.Errorf("a restarted instance: %d, want 401 for the signed-out session", got)
			}
			if got := me(restarted, other); got != http.StatusOK {
				t.Errorf("a restarted instance, the other session: %d, want 200", got)
			}
		})
	}
}
