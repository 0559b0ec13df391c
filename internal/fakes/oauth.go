package fakes

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// OAuthServer is an OAuth 2.1 authorization server on loopback, as strict
// as a real one about what the gateway's per-person upstream credentials
// rely on: RFC 8414 metadata, RFC 7591 registration, the authorization
// code grant with PKCE S256 only and RFC 8707's resource required on the
// authorization and code requests, single-use codes, refresh tokens
// that rotate (a spent one is refused, and counted), and RFC 7009
// revocation (a revoked refresh token ends its access tokens too). The person
// authorizing is whoever the browser's OAuthUserCookie names: the
// upstream's own sign-in, which the test sets in its browser's jar.
type OAuthServer struct {
	*httptest.Server
	// Resource is the one resource (the MCP server's URL) it issues for.
	Resource string
	// AccessTTL is an access token's life (default one hour).
	AccessTTL time.Duration

	mu       sync.Mutex
	clients  map[string][]string // client id → redirect URIs
	secrets  map[string]string   // client id → secret, for confidential clients
	codes    map[string]oauthCode
	access   map[string]oauthAccess
	refresh  map[string]string // live refresh token → user
	spent    map[string]bool
	reused   int
	refreshs int
	// registered counts RFC 7591 registrations; revoked holds each
	// RFC 7009 revocation, as "<client id> <token type hint> <token>".
	registered int
	revoked    []string
	// noRevocation leaves revocation_endpoint out of the metadata;
	// hangRevocations makes the endpoint answer nothing until the
	// request ends.
	noRevocation, hangRevocations bool
}

// OAuthUserCookie names the user signed in at the fake server.
const OAuthUserCookie = "fake_as_user"

type oauthCode struct {
	client, redirect, challenge, user string
}

type oauthAccess struct {
	user    string
	expires time.Time
	// refresh is the refresh token issued with it: revoking that one
	// ends this one too (RFC 7009 2.1).
	refresh string
}

// NewOAuthServer starts a server issuing tokens for resource.
func NewOAuthServer(resource string) *OAuthServer {
	s := &OAuthServer{Resource: resource, AccessTTL: time.Hour, clients: map[string][]string{}, secrets: map[string]string{}, codes: map[string]oauthCode{},
		access: map[string]oauthAccess{}, refresh: map[string]string{}, spent: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorize)
	mux.HandleFunc("POST /token", s.token)
	mux.HandleFunc("POST /revoke", s.revoke)
	s.Server = httptest.NewServer(mux)
	return s
}

func (s *OAuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{"issuer": s.URL, "authorization_endpoint": s.URL + "/authorize", "token_endpoint": s.URL + "/token",
		"registration_endpoint": s.URL + "/register", "response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic"},
		"authorization_response_iss_parameter_supported": true, "revocation_endpoint": s.URL + "/revoke"}
	s.mu.Lock()
	if s.noRevocation {
		delete(m, "revocation_endpoint")
	}
	s.mu.Unlock()
	oauthJSON(w, http.StatusOK, m)
}

// SetRevocation makes the server advertise RFC 7009 revocation or not,
// and its revocation endpoint answer or hang until the request ends.
func (s *OAuthServer) SetRevocation(offered, hang bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noRevocation, s.hangRevocations = !offered, hang
}

func (s *OAuthServer) register(w http.ResponseWriter, r *http.Request) {
	var m struct {
		RedirectURIs []string `json:"redirect_uris"`
	}
	if json.NewDecoder(r.Body).Decode(&m) != nil || len(m.RedirectURIs) == 0 {
		oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_redirect_uri"})
		return
	}
	id := "client-" + oauthRandom()
	s.mu.Lock()
	s.clients[id] = m.RedirectURIs
	s.registered++
	s.mu.Unlock()
	oauthJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": m.RedirectURIs, "token_endpoint_auth_method": "none"})
}

func (s *OAuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	redirects, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	if !known || !slices.Contains(redirects, q.Get("redirect_uri")) {
		http.Error(w, "unknown client or redirect_uri", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(q.Get("redirect_uri"))
	reply := func(v url.Values) {
		v.Set("state", q.Get("state"))
		v.Set("iss", s.URL)
		back.RawQuery = v.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	}
	c, err := r.Cookie(OAuthUserCookie)
	switch {
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43:
		reply(url.Values{"error": {"invalid_request"}})
	case q.Get("resource") != s.Resource:
		reply(url.Values{"error": {"invalid_target"}})
	case err != nil || c.Value == "":
		reply(url.Values{"error": {"access_denied"}})
	default:
		code := oauthRandom()
		s.mu.Lock()
		s.codes[code] = oauthCode{client: q.Get("client_id"), redirect: q.Get("redirect_uri"), challenge: q.Get("code_challenge"), user: c.Value}
		s.mu.Unlock()
		reply(url.Values{"code": {code}})
	}
}

func (s *OAuthServer) token(w http.ResponseWriter, r *http.Request) {
	if r.ParseForm() != nil {
		oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f := r.PostForm
	s.mu.Lock()
	defer s.mu.Unlock()
	// A confidential client authenticates with HTTP Basic (RFC 6749
	// 2.3.1); a public one names itself in the form.
	client := f.Get("client_id")
	if id, secret, basic := r.BasicAuth(); basic {
		client = id
		if want, ok := s.secrets[id]; !ok || want != secret {
			oauthJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
	} else if _, confidential := s.secrets[client]; confidential {
		oauthJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	var user string
	switch f.Get("grant_type") {
	case "authorization_code":
		c, ok := s.codes[f.Get("code")]
		delete(s.codes, f.Get("code"))
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		switch {
		case !ok || c.client != client || c.redirect != f.Get("redirect_uri"):
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge:
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant", "error_description": "PKCE verifier does not match"})
			return
		case f.Get("resource") != s.Resource:
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target"})
			return
		}
		user = c.user
	case "refresh_token":
		rt := f.Get("refresh_token")
		if s.spent[rt] {
			s.reused++
		}
		u, ok := s.refresh[rt]
		if !ok {
			oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(s.refresh, rt)
		s.spent[rt] = true
		s.refreshs++
		user = u
	default:
		oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := "at-"+oauthRandom(), "rt-"+oauthRandom()
	s.access[at] = oauthAccess{user: user, expires: time.Now().Add(s.AccessTTL), refresh: rt}
	s.refresh[rt] = user
	w.Header().Set("Cache-Control", "no-store")
	oauthJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(s.AccessTTL.Seconds()), "refresh_token": rt})
}

// revoke is RFC 7009's endpoint: a client authenticates as at the token
// endpoint, and the answer is 200 whether the token was known or not.
func (s *OAuthServer) revoke(w http.ResponseWriter, r *http.Request) {
	if r.ParseForm() != nil || r.PostForm.Get("token") == "" {
		oauthJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	if s.hangRevocations {
		s.mu.Unlock()
		<-r.Context().Done()
		return
	}
	defer s.mu.Unlock()
	client := r.PostForm.Get("client_id")
	if id, secret, basic := r.BasicAuth(); basic {
		client = id
		if want, ok := s.secrets[id]; !ok || want != secret {
			oauthJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
			return
		}
	}
	if _, known := s.clients[client]; !known {
		oauthJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	tok := r.PostForm.Get("token")
	s.revoked = append(s.revoked, client+" "+r.PostForm.Get("token_type_hint")+" "+tok)
	delete(s.access, tok)
	if _, ok := s.refresh[tok]; ok {
		delete(s.refresh, tok)
		for k, a := range s.access {
			if a.refresh == tok {
				delete(s.access, k)
			}
		}
	}
	w.WriteHeader(http.StatusOK)
}

// Registrations counts the clients registered by RFC 7591.
func (s *OAuthServer) Registrations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.registered
}

// Revoked is every RFC 7009 revocation received, in order, each as
// "<client id> <token_type_hint> <token>".
func (s *OAuthServer) Revoked() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.revoked...)
}

// AddClient registers a confidential client, as an operator would by hand.
func (s *OAuthServer) AddClient(id, secret, redirect string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[id] = []string{redirect}
	s.secrets[id] = secret
}

// Who is the user an access token was issued to, while it is valid.
func (s *OAuthServer) Who(token string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.access[token]
	if !ok || !time.Now().Before(a.expires) {
		return "", false
	}
	return a.user, true
}

// ExpireAll makes every access token issued so far invalid at once (the
// gateway still believes them good).
func (s *OAuthServer) ExpireAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, a := range s.access {
		a.expires = time.Now().Add(-time.Second)
		s.access[k] = a
	}
}

// Refreshes counts refresh grants served; Reused counts spent refresh
// tokens presented again.
func (s *OAuthServer) Refreshes() (served, reused int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshs, s.reused
}

// Issued is every access and refresh token issued so far (live, spent
// or revoked), for scanning logs and databases for them.
func (s *OAuthServer) Issued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.access {
		out = append(out, k)
	}
	for k := range s.refresh {
		out = append(out, k)
	}
	for k := range s.spent {
		out = append(out, k)
	}
	for _, r := range s.revoked {
		out = append(out, r[strings.LastIndexByte(r, ' ')+1:])
	}
	return out
}

func oauthJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthRandom() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}
