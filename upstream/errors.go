package upstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/modelgate/modelgate/providers"
)

// ErrorClass is a transport failure's short class for the attempt log:
// timeout, connection_refused, connection_reset, dns, tls,
// connect_timeout or transport.
func ErrorClass(ctx context.Context, err error) string {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection_reset"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return "dns"
	}
	// A certificate the gateway does not trust, an alert from the upstream
	// (it wants a client certificate, or refuses ours), or plain HTTP
	// where TLS was expected.
	var verifyErr *tls.CertificateVerificationError
	var rhErr tls.RecordHeaderError
	var opErr *net.OpError
	if errors.As(err, &verifyErr) || errors.As(err, &rhErr) || (errors.As(err, &opErr) && opErr.Op == "remote error") {
		return "tls"
	}
	if errors.As(err, &opErr) && opErr.Timeout() {
		return "connect_timeout"
	}
	return "transport"
}

// TransportError names the alias and the failure class, never the
// upstream URL (it may carry credentials) or key.
func TransportError(ctx context.Context, err error, alias string, timeout time.Duration) *providers.APIError {
	switch ErrorClass(ctx, err) {
	case "timeout":
		return &providers.APIError{Status: http.StatusGatewayTimeout, Message: fmt.Sprintf("model %q: upstream did not answer within %s", alias, timeout)}
	case "connection_refused":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream is not running (connection refused)", alias)}
	case "dns":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream host name does not resolve", alias)}
	case "connect_timeout":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream did not accept a connection in time", alias)}
	case "tls":
		return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: TLS with the upstream failed (its certificate is not trusted, or it wants a client certificate); see the deployment's tls_ca_file, tls_client_cert and tls_client_key", alias)}
	}
	return &providers.APIError{Status: http.StatusBadGateway, Message: fmt.Sprintf("model %q: upstream connection failed", alias)}
}

// RenewCredentials sends the request once more with fresh credentials
// when the cloud refused the cached ones (an access token revoked or
// expired early, rotated AWS keys) and fresh ones can be had, so that
// one stale token does not fail a client's request. Any other answer is
// returned as it came.
func (b *Deployment) RenewCredentials(ctx context.Context, cf providers.Format, client ClientMeta, body []byte, stream bool, resp *http.Response) (*http.Response, error) {
	if b.renewer == nil || resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return resp, nil
	}
	errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(errBody))
	msg := b.ParseError(resp.StatusCode, resp.Header, errBody).Message
	if !b.renewer.credentialsRefused(resp.StatusCode, msg) || !b.renewer.rejected() {
		return resp, nil
	}
	req, err := b.NewRequest(ctx, cf, client, body, stream)
	if err != nil {
		return nil, err
	}
	// The retry belongs to the same trace as the refused request.
	if resp.Request != nil {
		for _, k := range [...]string{"Traceparent", "Tracestate"} {
			if v := resp.Request.Header.Values(k); len(v) > 0 {
				req.Header[k] = v
			}
		}
	}
	return b.client.Do(req)
}

// asAPIError is err as the client's error: an APIError as it is, anything
// else a 400 (a body the translation refused).
func asAPIError(err error) *providers.APIError {
	var apiErr *providers.APIError
	if errors.As(err, &apiErr) {
		return apiErr
	}
	return &providers.APIError{Status: http.StatusBadRequest, Message: err.Error()}
}
