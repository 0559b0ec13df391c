package modellist

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate and its key as PEM files into dir.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "t"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "c.pem"), filepath.Join(dir, "k.pem")
	if os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600) != nil ||
		os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600) != nil {
		t.Fatal("writing PEM files")
	}
	return certFile, keyFile
}

func TestUpstreamTLSSettings(t *testing.T) {
	dir := t.TempDir()
	cert, key := selfSigned(t, dir)
	junk := filepath.Join(dir, "junk.pem")
	_ = os.WriteFile(junk, []byte("not pem"), 0o600)
	base := "{model: openai/m, api_key: none, api_base: https://vllm.internal:8000/v1, "
	cfg, _, err := Parse([]byte(one(base+"tls_ca_file: "+cert+", tls_client_cert: "+cert+", tls_client_key: "+key+"}")), "models.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Deployments[0]
	if d.TLS == nil || d.TLS.Config.RootCAs == nil || len(d.TLS.Config.Certificates) != 1 {
		t.Fatalf("TLS %+v", d.TLS)
	}
	// Relative paths are the models file's directory's.
	if _, _, err := Parse([]byte(one(base+"tls_ca_file: c.pem}")), filepath.Join(dir, "models.yaml"), nil); err != nil {
		t.Fatalf("relative path: %v", err)
	}
	for _, tc := range []struct{ params, want string }{
		{base + "tls_client_cert: " + cert + "}", "proxy_params.tls_client_key: required with tls_client_cert"},
		{base + "tls_client_key: " + key + "}", "proxy_params.tls_client_cert: required with tls_client_key"},
		{base + "tls_ca_file: " + filepath.Join(dir, "missing.pem") + "}", "proxy_params.tls_ca_file: cannot read the CA file"},
		{base + "tls_ca_file: " + junk + "}", "holds no PEM certificate"},
		{base + "tls_client_cert: " + cert + ", tls_client_key: " + junk + "}", "cannot load the client certificate and key"},
		{"{model: openai/m, api_key: none, api_base: http://vllm.internal:8000/v1, tls_ca_file: " + cert + "}", "TLS settings need an https:// api_base"},
	} {
		_, _, err := Parse([]byte(one(tc.params)), "models.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "model_list[0]") {
			t.Errorf("%s: %v, want %q", tc.params, err, tc.want)
		}
	}
}
