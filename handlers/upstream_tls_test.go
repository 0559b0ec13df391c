package handlers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// testCA is a private certificate authority for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue signs a leaf for the server (127.0.0.1) or a client; it returns
// the certificate and key as PEM.
func (ca *testCA) issue(t *testing.T, client bool) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "leaf"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature}
	if client {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	} else {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.ParseIP("127.0.0.1")}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUpstreamPrivateCAAndClientCertificate: an upstream behind internal
// TLS that requires a client certificate is reachable only with the
// deployment's tls_ca_file, tls_client_cert and tls_client_key; without
// them, or with a certificate it does not trust, the client gets a 502
// that says TLS and names the alias, never a secret.
func TestUpstreamPrivateCAAndClientCertificate(t *testing.T) {
	dir := t.TempDir()
	serverCA, clientCA, strangerCA := newTestCA(t, "server ca"), newTestCA(t, "client ca"), newTestCA(t, "stranger")
	srvCert, srvKey := serverCA.issue(t, false)
	pair, err := tls.X509KeyPair(srvCert, srvKey)
	if err != nil {
		t.Fatal(err)
	}
	clientPool := x509.NewCertPool()
	clientPool.AddCert(clientCA.cert)
	var hits int
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		writeOpenAI(w, r, "internal")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientPool}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	caFile := writeFile(t, dir, "ca.pem", serverCA.pem)
	cc, ck := clientCA.issue(t, true)
	certFile, keyFile := writeFile(t, dir, "client.pem", cc), writeFile(t, dir, "client.key", ck)
	sc, sk := strangerCA.issue(t, true)
	strangerCert, strangerKey := writeFile(t, dir, "stranger.pem", sc), writeFile(t, dir, "stranger.key", sk)

	entryWith := func(extra ...string) string {
		s := "model_list:\n  - model_name: m\n    proxy_params:\n      model: openai/m\n      api_base: " + srv.URL + "/v1\n      api_key: sk-internal-secret\n"
		for _, e := range extra {
			s += "      " + e + "\n"
		}
		return s
	}
	for _, tc := range []struct {
		name  string
		extra []string
		ok    bool
	}{
		{"no tls settings", nil, false},
		{"ca only", []string{"tls_ca_file: " + caFile}, false},
		{"untrusted client cert", []string{"tls_ca_file: " + caFile, "tls_client_cert: " + strangerCert, "tls_client_key: " + strangerKey}, false},
		{"ca and client cert", []string{"tls_ca_file: " + caFile, "tls_client_cert: " + certFile, "tls_client_key: " + keyFile}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, obs := testGateway(t, entryWith(tc.extra...), nil)
			before := hits
			rec := post(g, alice, "/v1/chat/completions", chatBody("m", false))
			if tc.ok {
				if rec.Code != http.StatusOK || content(t, rec.Body.Bytes()) != reply("internal") || hits != before+1 {
					t.Fatalf("%d %s", rec.Code, rec.Body.String())
				}
				return
			}
			body := rec.Body.String()
			if rec.Code != http.StatusBadGateway || !strings.Contains(body, "TLS") || !strings.Contains(body, `model \"m\"`) ||
				strings.Contains(body, "sk-internal-secret") || hits != before {
				t.Fatalf("%d %s, want a 502 that says TLS", rec.Code, body)
			}
			if at := obs.Attempts(); len(at) == 0 || at[0].Err != "tls" {
				t.Fatalf("attempts %+v, want error class tls", at)
			}
		})
	}
}
