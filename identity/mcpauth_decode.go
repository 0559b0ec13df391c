package identity

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"
)

// The decoders of the MCP authorization server's requests: a client's
// registration (RFC 7591 §2) and a token request (OAuth 2.1 §3.2.2).

const (
	maxRegistration = 16 << 10
	maxRedirectURIs = 8
	maxRedirectLen  = 2000
	maxClientName   = 200
)

// clientRegistration is what a registered client's id seals: the
// metadata the gateway acts on, nothing else the client sent.
type clientRegistration struct {
	RedirectURIs []string `json:"r"`
	Name         string   `json:"n,omitempty"`
}

// oauthErr is an OAuth error answer: {"error", "error_description"}.
type oauthErr struct {
	status     int
	code, desc string
}

func (e *oauthErr) write(w http.ResponseWriter) { oauthFail(w, e.status, e.code, e.desc) }

func oauthFail(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func badMetadata(code, desc string) *oauthErr {
	return &oauthErr{status: http.StatusBadRequest, code: code, desc: desc}
}

// decodeRegistration reads a registration request. Only public clients
// are registered (token_endpoint_auth_method none, PKCE): a client asking
// for a secret is told so rather than given one it would not need.
func decodeRegistration(body io.Reader) (clientRegistration, *oauthErr) {
	var in struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		GrantTypes   []string `json:"grant_types"`
		Responses    []string `json:"response_types"`
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		return clientRegistration{}, badMetadata("invalid_client_metadata", "body: larger than 16 KiB")
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return clientRegistration{}, badMetadata("invalid_client_metadata", "body: not a JSON object of client metadata (RFC 7591)")
	}
	if len(in.RedirectURIs) == 0 || len(in.RedirectURIs) > maxRedirectURIs {
		return clientRegistration{}, badMetadata("invalid_redirect_uri", "redirect_uris: give one to eight")
	}
	for _, u := range in.RedirectURIs {
		if err := checkRedirect(u); err != nil {
			return clientRegistration{}, badMetadata("invalid_redirect_uri", "redirect_uris: "+err.Error())
		}
	}
	if in.AuthMethod != "" && in.AuthMethod != "none" {
		return clientRegistration{}, badMetadata("invalid_client_metadata", "token_endpoint_auth_method: this gateway registers public clients only (none, with PKCE)")
	}
	for _, g := range in.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return clientRegistration{}, badMetadata("invalid_client_metadata", "grant_types: authorization_code and refresh_token only")
		}
	}
	for _, rt := range in.Responses {
		if rt != "code" {
			return clientRegistration{}, badMetadata("invalid_client_metadata", "response_types: code only")
		}
	}
	name := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return -1
		}
		return r
	}, in.ClientName)
	if len(name) > maxClientName || !utf8.ValidString(name) {
		return clientRegistration{}, badMetadata("invalid_client_metadata", "client_name: at most 200 bytes of text")
	}
	return clientRegistration{RedirectURIs: in.RedirectURIs, Name: name}, nil
}

// checkRedirect accepts https, http on loopback (RFC 8252 §7.3) and a
// native app's private-use scheme (§7.1); never a fragment, credentials
// or a scheme a browser would run.
func checkRedirect(s string) error {
	if len(s) > maxRedirectLen {
		return errors.New("a URI longer than 2000 bytes")
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || !u.IsAbs() {
		return errors.New("each must be an absolute URI")
	}
	if u.Fragment != "" || u.User != nil {
		return errors.New(s + " has a fragment or credentials")
	}
	switch strings.ToLower(u.Scheme) {
	case "https":
		if u.Host == "" {
			return errors.New(s + " has no host")
		}
	case "http":
		if !isLoopback(u.Hostname()) {
			return errors.New(s + ": plain http only on loopback (localhost, 127.0.0.1, [::1])")
		}
	case "javascript", "data", "file", "vbscript", "about", "blob", "ftp", "ws", "wss":
		return errors.New(s + ": not a redirect scheme")
	}
	return nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// redirect is the registered redirect URI an authorization request names
// (or the only one, when it names none): the same string, or a loopback
// one differing only in its port (RFC 8252 §7.3).
func (c clientRegistration) redirect(asked string) (string, bool) {
	if asked == "" {
		if len(c.RedirectURIs) == 1 {
			return c.RedirectURIs[0], true
		}
		return "", false
	}
	if slices.Contains(c.RedirectURIs, asked) {
		return asked, true
	}
	a, err := url.Parse(asked)
	if err != nil || a.Scheme != "http" || !isLoopback(a.Hostname()) {
		return "", false
	}
	for _, reg := range c.RedirectURIs {
		r, err := url.Parse(reg)
		if err == nil && r.Scheme == "http" && r.Hostname() == a.Hostname() && r.Path == a.Path && r.RawQuery == a.RawQuery {
			return asked, true
		}
	}
	return "", false
}

// mcpTokenRequest is a token request as the token endpoint acts on it.
type mcpTokenRequest struct {
	GrantType   string
	Token       string // the code, or the refresh token
	ClientID    string
	RedirectURI string
	Verifier    string
	Resource    string
}

// parseTokenRequest reads a token request's form. A repeated parameter is
// an error (OAuth 2.1 §3.2.2: "parameters MUST NOT be included more than
// once").
func parseTokenRequest(form url.Values) (mcpTokenRequest, *oauthErr) {
	bad := func(code, desc string) (mcpTokenRequest, *oauthErr) {
		return mcpTokenRequest{}, &oauthErr{status: http.StatusBadRequest, code: code, desc: desc}
	}
	for k, v := range form {
		if len(v) > 1 {
			return bad("invalid_request", k+": given more than once")
		}
	}
	req := mcpTokenRequest{GrantType: form.Get("grant_type"), ClientID: form.Get("client_id"), RedirectURI: form.Get("redirect_uri"),
		Verifier: form.Get("code_verifier"), Resource: form.Get("resource")}
	if req.ClientID == "" {
		return mcpTokenRequest{}, &oauthErr{status: http.StatusUnauthorized, code: "invalid_client", desc: "client_id: required (public clients send it in the form)"}
	}
	switch req.GrantType {
	case "authorization_code":
		req.Token = form.Get("code")
		if req.Token == "" || req.Verifier == "" {
			return bad("invalid_request", "code and code_verifier: required")
		}
		if n := len(req.Verifier); n < 43 || n > 128 {
			return bad("invalid_request", "code_verifier: 43 to 128 characters (RFC 7636)")
		}
	case "refresh_token":
		req.Token = form.Get("refresh_token")
		if req.Token == "" {
			return bad("invalid_request", "refresh_token: required")
		}
	case "":
		return bad("invalid_request", "grant_type: required")
	default:
		return bad("unsupported_grant_type", "grant_type: authorization_code or refresh_token")
	}
	return req, nil
}
