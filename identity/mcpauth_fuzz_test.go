package identity

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzDecodeRegistration: whatever a client posts, a registration is
// either refused or holds one to eight redirect URIs the checks accept
// and a short, printable name.
func FuzzDecodeRegistration(f *testing.F) {
	f.Add(`{"redirect_uris":["http://localhost:5555/callback"],"client_name":"Claude Code (gw)","grant_types":["authorization_code","refresh_token"],"response_types":["code"],"token_endpoint_auth_method":"none"}`)
	f.Add(`{"redirect_uris":["cursor://anysphere.cursor-retrieval/oauth/callback"]}`)
	f.Add(`{"redirect_uris":["javascript:alert(1)"],"client_name":"\u0000x"}`)
	f.Add(`{"redirect_uris":"x"}`)
	f.Fuzz(func(t *testing.T, body string) {
		reg, err := decodeRegistration(strings.NewReader(body))
		if err != nil {
			if err.code == "" || err.status != 400 {
				t.Fatalf("refusal %+v", err)
			}
			return
		}
		if n := len(reg.RedirectURIs); n < 1 || n > maxRedirectURIs {
			t.Fatalf("%d redirect URIs accepted", n)
		}
		for _, u := range reg.RedirectURIs {
			if checkRedirect(u) != nil {
				t.Fatalf("accepted %q", u)
			}
		}
		if len(reg.Name) > maxClientName || strings.ContainsAny(reg.Name, "\x00\r\n") {
			t.Fatalf("name %q", reg.Name)
		}
	})
}

// FuzzParseTokenRequest: an accepted token request names a known grant,
// its client and the code or refresh token it redeems, each once.
func FuzzParseTokenRequest(f *testing.F) {
	f.Add("grant_type=authorization_code&code=abc&client_id=mgc_x&redirect_uri=http%3A%2F%2Flocalhost%3A1%2Fcallback&code_verifier=" + strings.Repeat("v", 43))
	f.Add("grant_type=refresh_token&refresh_token=r&client_id=c")
	f.Add("grant_type=refresh_token&refresh_token=r&refresh_token=s&client_id=c")
	f.Add("grant_type=password&username=a")
	f.Fuzz(func(t *testing.T, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		req, oerr := parseTokenRequest(form)
		if oerr != nil {
			if oerr.code == "" {
				t.Fatalf("refusal without a code: %+v", oerr)
			}
			return
		}
		if req.ClientID == "" || req.Token == "" || (req.GrantType != "authorization_code" && req.GrantType != "refresh_token") {
			t.Fatalf("accepted %+v", req)
		}
		if req.GrantType == "authorization_code" && (len(req.Verifier) < 43 || len(req.Verifier) > 128) {
			t.Fatalf("verifier %q accepted", req.Verifier)
		}
		for k, v := range form {
			if len(v) > 1 {
				t.Fatalf("%s repeated, accepted", k)
			}
		}
	})
}
