package fakes

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// ServiceAccount is a test service account: its key file (as Google
// issues them, with the key as PKCS#8 PEM) and the public half the Vertex
// fake checks assertions with.
type ServiceAccount struct {
	JSON        []byte
	ClientEmail string
	Public      *rsa.PublicKey
}

// NewServiceAccount generates an RSA key and a key file whose token_uri
// is tokenURI.
func NewServiceAccount(project, tokenURI string) (*ServiceAccount, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	email := "modelgate-test@" + project + ".iam.gserviceaccount.com"
	b, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     project,
		"private_key_id": "fake-key-1",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   email,
		"client_id":      "1234567890",
		"token_uri":      tokenURI,
	})
	if err != nil {
		return nil, err
	}
	return &ServiceAccount{JSON: b, ClientEmail: email, Public: &key.PublicKey}, nil
}

// VertexOptions shapes the Vertex fake.
type VertexOptions struct {
	Options
	Project, Location string
	// Account is the only service account whose assertions get tokens.
	Account *ServiceAccount
	// TokenTTL is how long issued tokens live; default an hour.
	TokenTTL time.Duration
}

// Vertex is a Vertex AI server for Claude with its own token endpoint.
type Vertex struct {
	o   VertexOptions
	rec *Recorder
	// TokenPath is where the token endpoint listens; a key file's
	// token_uri points at the server's URL plus it.
	TokenPath string

	mu      sync.Mutex
	tokens  map[string]time.Time // access token → expiry
	granted int
}

// NewVertex returns the fake. rec records prediction calls, not token
// requests. Unlike the other fakes it returns its state with it, for
// Granted and RevokeAll.
func NewVertex(o VertexOptions, rec *Recorder) *Vertex {
	if o.TokenTTL <= 0 {
		o.TokenTTL = time.Hour
	}
	return &Vertex{o: o, rec: rec, TokenPath: "/token", tokens: map[string]time.Time{}}
}

// Granted is the number of tokens issued.
func (v *Vertex) Granted() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.granted
}

// RevokeAll invalidates every token issued, as an expiry or a key
// rotation would.
func (v *Vertex) RevokeAll() {
	v.mu.Lock()
	defer v.mu.Unlock()
	clear(v.tokens)
}

// ServeHTTP serves the token endpoint (a JWT-bearer grant, RFC 7523, whose
// assertion must be signed RS256 by the service account's key, name it as
// issuer, the token endpoint as audience, the cloud-platform scope, and be
// unexpired) and rawPredict, streamRawPredict (plain Anthropic SSE) and
// count-tokens:rawPredict under
// /v1/projects/{project}/locations/{location}/publishers/anthropic/models/.
// Every prediction call needs a Bearer token it issued; bodies need
// anthropic_version: vertex-2023-10-16 and no model (count-tokens needs
// one).
func (v *Vertex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == v.TokenPath {
		v.token(w, r)
		return
	}
	if strings.HasPrefix(r.URL.Path, "/computeMetadata/") {
		v.metadata(w, r)
		return
	}
	body := readBody(r)
	if v.rec != nil {
		v.rec.add(r, body)
	}
	fail := func(status int, state, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `[{"error":{"code":%d,"message":%q,"status":%q}}]`, status, msg, state)
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	v.mu.Lock()
	exp, known := v.tokens[tok]
	v.mu.Unlock()
	if !ok || !known || time.Now().After(exp) {
		fail(http.StatusUnauthorized, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.")
		return
	}
	if v.o.Status != 0 {
		fail(v.o.Status, googleStatus(v.o.Status), fmt.Sprintf("fake failure %d", v.o.Status))
		return
	}
	prefix := fmt.Sprintf("/v1/projects/%s/locations/%s/publishers/anthropic/models/", v.o.Project, v.o.Location)
	rest, ok := strings.CutPrefix(r.URL.Path, prefix)
	model, method, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || r.Method != http.MethodPost {
		fail(http.StatusNotFound, "NOT_FOUND", "The requested URL was not found on this server.")
		return
	}
	var req struct {
		Model            *string           `json:"model"`
		AnthropicVersion string            `json:"anthropic_version"`
		MaxTokens        *int              `json:"max_tokens"`
		Stream           bool              `json:"stream"`
		Messages         []json.RawMessage `json:"messages"`
		Tools            json.RawMessage   `json:"tools"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "Invalid JSON payload received.")
		return
	}
	if req.AnthropicVersion != "vertex-2023-10-16" {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "anthropic_version: vertex-2023-10-16 is required in the body")
		return
	}
	if model == "count-tokens" {
		if method != "rawPredict" || req.Model == nil || *req.Model == "" {
			fail(http.StatusBadRequest, "INVALID_ARGUMENT", "count-tokens:rawPredict needs the model in the body")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"input_tokens":%d}`, 40+len(body)/100)
		return
	}
	if req.Model != nil {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "model: Extra inputs are not permitted")
		return
	}
	if req.MaxTokens == nil {
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", "max_tokens: Field required")
		return
	}
	tool := wantsTool(req.Tools, req.Messages)
	switch {
	case method == "rawPredict" && !req.Stream:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, anthropicMessage(v.o.Options, model, tool))
	case method == "streamRawPredict" && req.Stream:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		anthropicStream(v.o.Options, r, model, tool, func(name, data string) {
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
			flush(w)
		})
	default:
		fail(http.StatusBadRequest, "INVALID_ARGUMENT", fmt.Sprintf("%s with stream=%v is not supported", method, req.Stream))
	}
}

func googleStatus(status int) string {
	switch status {
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusBadRequest:
		return "INVALID_ARGUMENT"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	return "INTERNAL"
}

// metadata is the GCE metadata server's part that hands the instance's
// service account tokens (what GKE workload identity and Cloud Run serve
// too): the Metadata-Flavor header is required, as Google requires it,
// and the token must be asked for the cloud-platform scope.
func (v *Vertex) metadata(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Metadata-Flavor", "Google")
	if r.Header.Get("Metadata-Flavor") != "Google" {
		http.Error(w, "Missing Metadata-Flavor:Google header.", http.StatusForbidden)
		return
	}
	switch r.URL.Path {
	case "/computeMetadata/v1/project/project-id":
		_, _ = w.Write([]byte(v.o.Project))
	case "/computeMetadata/v1/instance/service-accounts/default/token":
		if !slices.Contains(strings.Split(r.URL.Query().Get("scopes"), ","), "https://www.googleapis.com/auth/cloud-platform") {
			http.Error(w, "the cloud-platform scope is required", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":%d,"token_type":"Bearer"}`, v.issue(), int(v.o.TokenTTL.Seconds()))
	default:
		http.NotFound(w, r)
	}
}

// issue mints an access token the prediction endpoints accept.
func (v *Vertex) issue() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	tok := "ya29.fake-" + hex.EncodeToString(b)
	v.mu.Lock()
	v.tokens[tok] = time.Now().Add(v.o.TokenTTL)
	v.granted++
	v.mu.Unlock()
	return tok
}

// token answers a JWT-bearer grant.
func (v *Vertex) token(w http.ResponseWriter, r *http.Request) {
	fail := func(code, desc string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":%q,"error_description":%q}`, code, desc)
	}
	if r.Method != http.MethodPost || r.ParseForm() != nil {
		fail("invalid_request", "POST a form")
		return
	}
	if r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		fail("unsupported_grant_type", "Invalid grant_type: "+r.PostForm.Get("grant_type"))
		return
	}
	parts := strings.Split(r.PostForm.Get("assertion"), ".")
	if len(parts) != 3 {
		fail("invalid_grant", "Invalid JWT: not three segments")
		return
	}
	var head struct {
		Alg string `json:"alg"`
	}
	var claims struct {
		Iss   string `json:"iss"`
		Scope string `json:"scope"`
		Aud   string `json:"aud"`
		Exp   int64  `json:"exp"`
		Iat   int64  `json:"iat"`
	}
	hb, err1 := base64.RawURLEncoding.DecodeString(parts[0])
	cb, err2 := base64.RawURLEncoding.DecodeString(parts[1])
	sig, err3 := base64.RawURLEncoding.DecodeString(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || json.Unmarshal(hb, &head) != nil || json.Unmarshal(cb, &claims) != nil {
		fail("invalid_grant", "Invalid JWT: malformed")
		return
	}
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if head.Alg != "RS256" || v.o.Account == nil || rsa.VerifyPKCS1v15(v.o.Account.Public, crypto.SHA256, sum[:], sig) != nil {
		fail("invalid_grant", "Invalid JWT Signature.")
		return
	}
	now := time.Now().Unix()
	switch {
	case claims.Iss != v.o.Account.ClientEmail:
		fail("invalid_grant", "Invalid JWT: issuer is not the service account")
	case claims.Aud != "http://"+r.Host+v.TokenPath:
		fail("invalid_grant", "Invalid JWT: Failed audience check. The right audience is the token endpoint")
	case !containsWord(claims.Scope, "https://www.googleapis.com/auth/cloud-platform"):
		fail("invalid_scope", "the cloud-platform scope is required")
	case claims.Exp <= now || claims.Iat > now+300 || claims.Exp-claims.Iat > 3600:
		fail("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe")
	default:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"expires_in":%d,"token_type":"Bearer"}`, v.issue(), int(v.o.TokenTTL.Seconds()))
	}
}

func containsWord(list, word string) bool {
	for _, w := range strings.Fields(list) {
		if w == word {
			return true
		}
	}
	return false
}
