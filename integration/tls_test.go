package integration

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/modelgate/modelgate/internal/fakes"
)

// TestTLSInternal serves the gateway over HTTPS with Caddy's internal CA
// and calls it with a client that trusts only that CA's root.
func TestTLSInternal(t *testing.T) {
	u := startUpstreams(t, fakes.Options{})
	g := startGateway(t, gatewayConfig{models: u.modelsYAML(), tls: true})
	rootPEM, err := os.ReadFile(filepath.Join(g.dir, "data", "caddy", "pki", "authorities", "local", "root.crt"))
	if err != nil {
		t.Fatalf("reading Caddy's local root: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(rootPEM) {
		t.Fatal("root.crt holds no certificate")
	}
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	client := openai.NewClient(option.WithBaseURL(g.base+"/v1/"), option.WithAPIKey(aliceKey), option.WithHTTPClient(httpClient), option.WithMaxRetries(0))
	resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "echo", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("over TLS")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Choices[0].Message.Content; got != "over TLS" {
		t.Errorf("reply = %q", got)
	}
	// A client that does not trust the internal CA must be refused.
	_, err = http.Get(g.base + "/health/liveliness")
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("an untrusting client got %v, want an unknown-authority error: the certificate must come from the internal CA", err)
	}
}
