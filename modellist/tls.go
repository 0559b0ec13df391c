package modellist

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strings"
)

// UpstreamTLS is how the gateway connects to an https upstream that a
// private CA signs or that asks for a client certificate (a vLLM server
// behind internal TLS, say). Paths are as written, resolved against the
// models file's directory; Config is built from them at load.
type UpstreamTLS struct {
	CAFile, CertFile, KeyFile string
	Config                    *tls.Config `json:"-"`
}

// Key identifies the settings, so that deployments of one server with
// different TLS settings get different connections.
func (t *UpstreamTLS) Key() string {
	if t == nil {
		return ""
	}
	return t.CAFile + "\x00" + t.CertFile + "\x00" + t.KeyFile
}

// upstreamTLS reads tls_ca_file, tls_client_cert and tls_client_key.
func (p *parser) upstreamTLS(d *Deployment, fs map[string]field, w where) {
	path := func(name string) string {
		f, ok := fs[name]
		if !ok || isNull(deref(f.val)) {
			return ""
		}
		s, ok := p.scalar(f.val, w.sub(name))
		if !ok {
			return ""
		}
		if s != "" && !filepath.IsAbs(s) {
			s = filepath.Join(filepath.Dir(p.source), s)
		}
		return s
	}
	ca, cert, key := path("tls_ca_file"), path("tls_client_cert"), path("tls_client_key")
	if ca == "" && cert == "" && key == "" {
		return
	}
	node := func(name string) *field {
		if f, ok := fs[name]; ok {
			return &f
		}
		return nil
	}
	first := node("tls_ca_file")
	firstName := "tls_ca_file"
	if first == nil {
		first, firstName = node("tls_client_cert"), "tls_client_cert"
	}
	if first == nil {
		first, firstName = node("tls_client_key"), "tls_client_key"
	}
	if !strings.HasPrefix(d.APIBase, "https://") {
		p.errorf(first.val, w.sub(firstName), "TLS settings need an https:// api_base; this deployment's is %q", d.APIBase)
		return
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			p.errorf(node("tls_ca_file").val, w.sub("tls_ca_file"), "cannot read the CA file: %v", err)
			return
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			p.errorf(node("tls_ca_file").val, w.sub("tls_ca_file"), "%s holds no PEM certificate; give the CA certificate that signed the upstream's", ca)
			return
		}
		cfg.RootCAs = pool
	}
	switch {
	case cert != "" && key != "":
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			p.errorf(node("tls_client_cert").val, w.sub("tls_client_cert"), "cannot load the client certificate and key: %v", err)
			return
		}
		cfg.Certificates = []tls.Certificate{pair}
	case cert != "":
		p.errorf(node("tls_client_cert").val, w.sub("tls_client_key"), "required with tls_client_cert: the PEM file of the certificate's private key")
		return
	case key != "":
		p.errorf(node("tls_client_key").val, w.sub("tls_client_cert"), "required with tls_client_key: the PEM file of the client certificate")
		return
	}
	d.TLS = &UpstreamTLS{CAFile: ca, CertFile: cert, KeyFile: key, Config: cfg}
}
