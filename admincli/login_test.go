package admincli

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelgate/modelgate/adminapi"
)

// TestLoginKeepsCACert: a login made with --ca-cert against a gateway on
// a private CA keeps a copy of that CA, so the renewal that
// `login --print-key` (Claude Code's apiKeyHelper, a new process with no
// flag) makes near the key's expiry reaches the gateway after the
// original file is gone; env prints NODE_EXTRA_CA_CERTS and SSL_CERT_FILE
// naming the copy and a bundle that holds it.
func TestLoginKeepsCACert(t *testing.T) {
	now := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	issued := 0
	gw := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req map[string]string
		_ = json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/auth/oidc/device":
			_ = json.NewEncoder(w).Encode(map[string]any{"device_code": "dc", "user_code": "ABCD-EFGH",
				"verification_uri": "https://idp.example.com/device", "expires_in": 600, "interval": 1})
		case r.URL.Path == "/auth/oidc/token" && (req["device_code"] == "dc" || req["refresh_token"] == "rt"):
			issued++
			_ = json.NewEncoder(w).Encode(adminapi.PersonKey{Key: "sk-mg-key" + string(rune('0'+issued)), KeyID: "apikey_1",
				ExpiresAt: now.Add(time.Duration(issued) * time.Hour).Format(time.RFC3339), RefreshToken: "rt", ID: "bob@example.com", Role: "member"})
		default:
			http.Error(w, `{"error":{"message":"unexpected"}}`, http.StatusBadRequest)
		}
	}))
	defer gw.Close()
	ca := filepath.Join(t.TempDir(), "root.crt")
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: gw.Certificate().Raw})
	if err := os.WriteFile(ca, caPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	first := &Login{Gateway: gw.URL, CACert: ca, Dir: dir, Now: func() time.Time { return now }}
	s, err := first.Run(ctx)
	if err != nil {
		t.Fatalf("login --ca-cert: %v", err)
	}
	if s.CACert != filepath.Join(dir, "ca.pem") || s.CABundle != filepath.Join(dir, "ca-bundle.pem") {
		t.Fatalf("the login keeps its CA at %q and %q", s.CACert, s.CABundle)
	}
	if err := os.Remove(ca); err != nil {
		t.Fatal(err)
	}
	// In the last 5 minutes of the key's hour: --print-key renews it.
	helper := &Login{Dir: dir, Now: func() time.Time { return now.Add(56 * time.Minute) }}
	key, err := helper.Key(ctx)
	if err != nil || key != "sk-mg-key2" {
		t.Fatalf("--print-key's renewal without --ca-cert: %q, %v", key, err)
	}
	stored, err := helper.Load()
	if err != nil {
		t.Fatal(err)
	}
	env := Env(stored, "/usr/local/bin/caddy")
	for _, want := range []string{"export NODE_EXTRA_CA_CERTS=" + stored.CACert + "\n", "export SSL_CERT_FILE=" + stored.CABundle + "\n",
		`"apiKeyHelper": "/usr/local/bin/caddy modelgate login --print-key"`} {
		if !strings.Contains(env, want) {
			t.Errorf("env lacks %q:\n%s", want, env)
		}
	}
	for _, f := range []string{stored.CACert, stored.CABundle} {
		b, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(b), string(caPEM)) {
			t.Errorf("%s does not hold the gateway's CA (%v)", f, err)
		}
	}
	if plain := Env(&Stored{Gateway: "https://gw.example.com"}, "caddy"); strings.Contains(plain, "NODE_EXTRA_CA_CERTS") || strings.Contains(plain, "SSL_CERT_FILE") {
		t.Errorf("env without a CA names one:\n%s", plain)
	}
}
