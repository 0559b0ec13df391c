package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/adminapi"
	"github.com/modelgate/modelgate/ledger"
	"github.com/modelgate/modelgate/policy"
)

// tokenRequest is what `caddy modelgate login` posts to TokenPath: the
// device code it is waiting on, or the refresh token it holds.
type tokenRequest struct {
	DeviceCode   string `json:"device_code"`
	RefreshToken string `json:"refresh_token"`
	// CLICode and CodeVerifier redeem a loopback browser sign-in.
	CLICode      string `json:"cli_code"`
	CodeVerifier string `json:"code_verifier"`
}

// handoff is a browser sign-in for the CLI, sealed into the redirect to
// its loopback listener; only the holder of the PKCE verifier can redeem
// it, so the address left in the browser's history is of no use.
type handoff struct {
	Person       Person    `json:"p"`
	RefreshToken string    `json:"r,omitempty"`
	Challenge    string    `json:"c"`
	Expires      time.Time `json:"e"`
}

const handoffPurpose = "mg_cli_handoff"

// handOff ends a `login --browser` sign-in at the CLI's listener.
func (h *Handler) handOff(w http.ResponseWriter, r *http.Request, f flow, person Person, refresh string) {
	sealed, err := h.seal.seal(handoffPurpose, handoff{Person: person, RefreshToken: refresh, Challenge: f.CLIChallenge, Expires: h.now().Add(2 * time.Minute)})
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "the sign-in could not be handed to the CLI")
		return
	}
	http.SetCookie(w, h.cookie(r, flowCookie, "", prefix, time.Time{}))
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, fmt.Sprintf("http://127.0.0.1:%d/callback?cli_code=%s", f.CLIPort, url.QueryEscape(sealed)), http.StatusFound)
}

// device starts the device authorization flow at the provider on the
// CLI's behalf: the client secret stays in the gateway.
func (h *Handler) device(w http.ResponseWriter, r *http.Request) {
	p, err := h.provider(r.Context())
	if err != nil {
		h.providerFailed(w, r, err)
		return
	}
	h.mu.Lock()
	deviceURL := h.deviceURL
	h.mu.Unlock()
	if deviceURL == "" {
		fail(w, http.StatusNotImplemented, "device_flow_unsupported", "the identity provider offers no device authorization endpoint; use `caddy modelgate login --browser`")
		return
	}
	if refused := h.deviceRefusal(); refused != "" {
		fail(w, http.StatusNotImplemented, "device_flow_unsupported", refused)
		return
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), h.hc), 15*time.Second)
	defer cancel()
	conf := h.oauth(p, "")
	var da struct {
		DeviceCode              string `json:"device_code"`
		UserCode                string `json:"user_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		ExpiresIn               int    `json:"expires_in"`
		Interval                int    `json:"interval"`
		Error                   string `json:"error"`
		Description             string `json:"error_description"`
	}
	// The client authenticates as at the token endpoint (RFC 8628 §3.1);
	// oauth2's DeviceAuth sends only the client id.
	if err := h.postForm(ctx, conf, deviceURL, url.Values{"scope": {strings.Join(conf.Scopes, " ")}}, &da); err != nil {
		fail(w, http.StatusBadGateway, "idp_error", "device authorization: "+err.Error())
		return
	}
	if da.Error != "" {
		// The provider has the flow but refuses it to this client
		// (unauthorized_client as RFC 8628 has it; invalid_request or
		// invalid_client from providers where the client lacks the grant:
		// Okta's grant types, Entra ID's "Allow public client flows").
		// Remembered, so the status page stops offering the flow and the
		// CLI goes straight to the browser.
		refused := fmt.Sprintf("the identity provider refused the device flow for client %s (%s: %s); run `caddy modelgate login --browser`, "+
			"or allow the device authorization grant for this client at the provider", h.cfg.ClientID, da.Error, da.Description)
		h.mu.Lock()
		h.deviceRefused, h.deviceRefusedAt = refused, h.now()
		h.mu.Unlock()
		fail(w, http.StatusNotImplemented, "device_flow_unsupported", refused)
		return
	}
	if da.DeviceCode == "" {
		fail(w, http.StatusBadGateway, "idp_error", "the identity provider's device authorization answer has no device_code; `caddy modelgate login --browser` signs in without the device flow")
		return
	}
	h.mu.Lock()
	h.deviceConfirmed = true
	h.mu.Unlock()
	if da.Interval <= 0 {
		da.Interval = 5
	}
	writeJSON(w, http.StatusOK, map[string]any{"device_code": da.DeviceCode, "user_code": da.UserCode,
		"verification_uri": da.VerificationURI, "verification_uri_complete": da.VerificationURIComplete,
		"expires_in": da.ExpiresIn, "interval": da.Interval})
}

// postForm posts v to the provider with the client's credentials (HTTP
// Basic, as the token endpoint takes them) and decodes its JSON answer,
// an error answer included.
func (h *Handler) postForm(ctx context.Context, conf *oauth2.Config, endpoint string, v url.Values, out any) error {
	v.Set("client_id", conf.ClientID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(v.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if conf.ClientSecret != "" {
		req.SetBasicAuth(url.QueryEscape(conf.ClientID), url.QueryEscape(conf.ClientSecret))
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		return errors.New("the identity provider is unreachable")
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out); err != nil {
		return fmt.Errorf("the identity provider's answer (HTTP %d) is not JSON", resp.StatusCode)
	}
	return nil
}

// token polls the device flow once, or renews with a refresh token, and
// on success mints the person's key. Pending answers carry RFC 8628's
// error codes (authorization_pending, slow_down) with status 400, so the
// CLI polls as it would a provider.
func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	var req tokenRequest
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/x-www-form-urlencoded" {
		if err := r.ParseForm(); err != nil {
			fail(w, http.StatusBadRequest, "invalid_request_error", "body: not a form")
			return
		}
		req.DeviceCode, req.RefreshToken = r.PostForm.Get("device_code"), r.PostForm.Get("refresh_token")
		req.CLICode, req.CodeVerifier = r.PostForm.Get("cli_code"), r.PostForm.Get("code_verifier")
	} else if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, "invalid_request_error", "body: want JSON {\"device_code\": …} or {\"refresh_token\": …}")
		return
	}
	given := 0
	for _, v := range []string{req.DeviceCode, req.RefreshToken, req.CLICode} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		fail(w, http.StatusBadRequest, "invalid_request_error", "give exactly one of device_code, refresh_token and cli_code")
		return
	}
	if h.controls == nil || h.controls.WaitStore(r.Context()) == nil {
		fail(w, http.StatusServiceUnavailable, "api_error", "per-person keys are kept in the gateway's key store (its ledger database), which is not open")
		return
	}
	p, err := h.provider(r.Context())
	if err != nil {
		h.providerFailed(w, r, err)
		return
	}
	ctx, cancel := context.WithTimeout(oidc.ClientContext(r.Context(), h.hc), 15*time.Second)
	defer cancel()
	conf := h.oauth(p, "")
	if req.CLICode != "" {
		var ho handoff
		if err := h.seal.open(handoffPurpose, req.CLICode, &ho); err != nil {
			fail(w, http.StatusUnauthorized, "authentication_error", "cli_code: "+err.Error())
			return
		}
		if !h.now().Before(ho.Expires) {
			fail(w, http.StatusUnauthorized, "authentication_error", "cli_code: expired; run `caddy modelgate login --browser` again")
			return
		}
		if req.CodeVerifier == "" || oauth2.S256ChallengeFromVerifier(req.CodeVerifier) != ho.Challenge {
			fail(w, http.StatusUnauthorized, "authentication_error", "code_verifier: does not match the challenge the sign-in started with")
			return
		}
		h.issue(w, r, ho.Person, ho.RefreshToken, "", "browser")
		return
	}
	var tok *oauth2.Token
	via := "device"
	if req.DeviceCode != "" {
		var pending string
		tok, pending, err = h.pollDevice(ctx, conf, req.DeviceCode)
		if pending != "" {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": pending})
			return
		}
		if err != nil {
			h.refuse(w, r, "device code: "+err.Error())
			return
		}
	} else {
		via = "refresh"
		tok, err = conf.TokenSource(ctx, &oauth2.Token{RefreshToken: req.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
		if err != nil {
			fail(w, http.StatusUnauthorized, "authentication_error",
				"refresh: the identity provider refused to renew the sign-in ("+oauthError(err)+"); run `caddy modelgate login` again")
			return
		}
	}
	person, _, err := h.person(ctx, p, tok, "", false)
	if err != nil {
		h.refuse(w, r, err.Error())
		return
	}
	h.issue(w, r, person, tok.RefreshToken, req.RefreshToken, via)
}

// issue mints the person's key and answers it with the refresh token
// that renews it (the provider's new one, else the one presented).
func (h *Handler) issue(w http.ResponseWriter, r *http.Request, person Person, refresh, presented, via string) {
	grant, refusal := h.grantFor(r.Context(), person)
	if refusal != "" {
		fail(w, http.StatusForbidden, "permission_error", refusal)
		return
	}
	ans, err := h.mint(r.Context(), person, grant, "oidc: ", h.cfg.KeyTTL)
	if err != nil {
		fail(w, http.StatusServiceUnavailable, "api_error", "the key could not be stored; retry")
		return
	}
	ans.RefreshToken = refresh
	if ans.RefreshToken == "" {
		ans.RefreshToken = presented
	}
	h.record(r.Context(), AuditEvent{Time: h.now().UTC(), Actor: person.ID(), Action: "oidc.key_minted", Target: ans.KeyID, Source: source(r),
		Fields: map[string]string{"via": via, "role": string(grant.Role), "workspace": grant.Workspace, "expires_at": ans.ExpiresAt}})
	writeJSON(w, http.StatusOK, ans)
}

// pollDevice asks the token endpoint once about a device code. pending
// is the provider's authorization_pending or slow_down.
func (h *Handler) pollDevice(ctx context.Context, conf *oauth2.Config, code string) (tok *oauth2.Token, pending string, err error) {
	var body struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		IDToken      string `json:"id_token"`
		Error        string `json:"error"`
		Description  string `json:"error_description"`
	}
	v := url.Values{"grant_type": {deviceGrant}, "device_code": {code}}
	if err := h.postForm(ctx, conf, conf.Endpoint.TokenURL, v, &body); err != nil {
		return nil, "", err
	}
	switch body.Error {
	case "":
	case "authorization_pending", "slow_down":
		return nil, body.Error, nil
	default:
		msg := body.Error
		if body.Description != "" {
			msg += " (" + body.Description + ")"
		}
		return nil, "", errors.New(msg)
	}
	if body.AccessToken == "" {
		return nil, "", errors.New("the identity provider answered no access token")
	}
	tok = &oauth2.Token{AccessToken: body.AccessToken, TokenType: body.TokenType, RefreshToken: body.RefreshToken}
	if body.ExpiresIn > 0 {
		tok.Expiry = h.now().Add(time.Duration(body.ExpiresIn) * time.Second)
	}
	return tok.WithExtra(map[string]any{"id_token": body.IDToken}), "", nil
}

// mint stores a new key for person in the runtime key store.
// name prefixes the key's name ("oidc: ", "mcp: "); it lives for ttl.
func (h *Handler) mint(ctx context.Context, person Person, grant Grant, name string, ttl time.Duration) (adminapi.PersonKey, error) {
	// The group's budget is the person's, over all their keys: a key
	// carries it as their default, not as a budget of its own (which
	// every sign-in would copy).
	limits, budget := grant.Split()
	k, secret, err := h.controls.MintKey(ctx, policy.NewKey{Name: name + person.ID(), Workspace: grant.Workspace,
		ExpiresAt: h.controls.Now().UTC().Add(ttl), Limits: limits,
		CreatedBy: &ledger.KeyCreator{Type: "oidc", ID: person.ID(), Email: person.Email, Subject: person.Subject, Issuer: person.Issuer,
			Groups: ledger.GroupLines(grant.Matched), Budget: budget, Role: string(grant.Role)}})
	if err != nil {
		return adminapi.PersonKey{}, err
	}
	// No models list allows every alias: null, as /v1/me says.
	models := grant.Models
	return adminapi.PersonKey{Key: secret, KeyID: k.ID, ExpiresAt: k.ExpiresAt.Format(time.RFC3339), ID: person.ID(), Email: person.Email, Subject: person.Subject,
		Groups: person.Groups, Role: string(grant.Role), WorkspaceID: grant.Workspace, Models: models}, nil
}
