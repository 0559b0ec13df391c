package admincli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/modelgate/modelgate/adminapi"
)

// Login is `caddy modelgate login`: it signs a person in through the
// gateway (the device flow: the gateway holds the provider's client
// secret) and keeps the short-lived key it mints in the user's config
// directory, renewing it with the provider's refresh token until the
// provider refuses.
type Login struct {
	Gateway string       // base URL; empty: the one stored by the last login
	HTTP    *http.Client // default: HTTPClient(CACert)
	// CACert is a PEM file of the CA the gateway's certificate comes from
	// (a private CA, Caddy's tls internal root), trusted besides the
	// system's roots. A login copies it beside its file and every later
	// renewal trusts that copy, so `login --print-key` run by an agent's
	// apiKeyHelper needs no flag. Empty: the stored login's, if any.
	CACert string
	Dir    string    // default: ConfigDir()
	Prompt io.Writer // where the sign-in instructions go (stderr)
	Now    func() time.Time
	// Browser signs in through a browser and a loopback listener instead
	// of the device flow (used anyway when the provider has no device
	// flow); NoOpen only prints the link instead of opening a browser.
	Browser, NoOpen bool
}

// Stored is what the login file keeps (mode 0600).
type Stored struct {
	Gateway      string    `json:"gateway"`
	Key          string    `json:"key"`
	KeyID        string    `json:"key_id"`
	ExpiresAt    time.Time `json:"expires_at"`
	ObtainedAt   time.Time `json:"obtained_at"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	ID           string    `json:"id"`
	Role         string    `json:"role"`
	WorkspaceID  string    `json:"workspace_id,omitempty"`
	Models       []string  `json:"models"`
	// CACert is the login's copy of the CA certificate it was given, and
	// CABundle the system's roots with it appended, for clients that
	// replace the roots (SSL_CERT_FILE); empty without --ca-cert.
	CACert   string `json:"ca_cert,omitempty"`
	CABundle string `json:"ca_bundle,omitempty"`
}

// ConfigDir is where the login is kept: <os.UserConfigDir()>/modelgate.
func ConfigDir() (string, error) {
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the config directory: %v", err)
	}
	return filepath.Join(d, "modelgate"), nil
}

func (l *Login) now() time.Time {
	if l.Now != nil {
		return l.Now()
	}
	return time.Now()
}

func (l *Login) file() (string, error) {
	dir := l.Dir
	if dir == "" {
		var err error
		if dir, err = ConfigDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(dir, "login.json"), nil
}

// Load reads the stored login.
func (l *Login) Load() (*Stored, error) {
	f, err := l.file()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(f)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errors.New("not signed in: run `caddy modelgate login --gateway <URL>` first")
	}
	if err != nil {
		return nil, err
	}
	var s Stored
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %v; run `caddy modelgate login` again", f, err)
	}
	return &s, nil
}

// save writes s readable by its owner only, replacing the file whole.
func (l *Login) save(s *Stored) error {
	f, err := l.file()
	if err != nil {
		return err
	}
	b, _ := json.MarshalIndent(s, "", "  ")
	return writeFile(f, b)
}

// writeFile replaces path whole with b, readable by its owner only,
// making its directory (0700) if needed.
func writeFile(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".login-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func (l *Login) post(ctx context.Context, path string, body any) (int, []byte, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(l.Gateway, "/")+path, bytes.NewReader(b))
	if err != nil {
		return 0, nil, fmt.Errorf("--gateway: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	hc := l.HTTP
	if hc == nil {
		if hc, err = HTTPClient(l.CACert); err != nil {
			return 0, nil, err
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, reachError(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, out, err
}

func answerError(status int, body []byte) error {
	if m := answerMessage(body); m != "" {
		return fmt.Errorf("the gateway answered %d: %s", status, m)
	}
	return fmt.Errorf("the gateway answered %d", status)
}

// answerMessage is the message of the gateway's error answer, if any.
func answerMessage(body []byte) string {
	var e apiError
	_ = json.Unmarshal(body, &e)
	return e.Error.Message
}

// Run signs in with the device flow and stores the key.
func (l *Login) Run(ctx context.Context) (*Stored, error) {
	if l.Gateway == "" {
		return nil, errors.New("--gateway: give the gateway's URL, e.g. --gateway https://gateway.example.com")
	}
	if l.Browser {
		return l.runBrowser(ctx)
	}
	status, body, err := l.post(ctx, "/auth/oidc/device", struct{}{})
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotImplemented {
		// The provider has no device flow, or not for this gateway's
		// client: a browser on this machine.
		if prompt := l.Prompt; prompt != nil {
			fmt.Fprintf(prompt, "The device flow is not available: %s\nSigning in with a browser on this machine instead.\n", answerMessage(body))
		}
		return l.runBrowser(ctx)
	}
	if status != http.StatusOK {
		return nil, answerError(status, body)
	}
	var da struct {
		DeviceCode              string `json:"device_code"`
		UserCode                string `json:"user_code"`
		VerificationURI         string `json:"verification_uri"`
		VerificationURIComplete string `json:"verification_uri_complete"`
		ExpiresIn               int    `json:"expires_in"`
		Interval                int    `json:"interval"`
	}
	if err := json.Unmarshal(body, &da); err != nil || da.DeviceCode == "" {
		return nil, errors.New("the gateway's device authorization answer is not understood")
	}
	prompt := l.Prompt
	if prompt == nil {
		prompt = io.Discard
	}
	fmt.Fprintf(prompt, "To sign in, open %s and enter the code %s\n", da.VerificationURI, da.UserCode)
	if da.VerificationURIComplete != "" {
		fmt.Fprintf(prompt, "(or open %s)\n", da.VerificationURIComplete)
	}
	interval := time.Duration(max(da.Interval, 1)) * time.Second
	deadline := l.now().Add(time.Duration(max(da.ExpiresIn, 60)) * time.Second)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(interval):
		}
		status, body, err := l.post(ctx, "/auth/oidc/token", map[string]string{"device_code": da.DeviceCode})
		if err != nil {
			return nil, err
		}
		if status == http.StatusOK {
			return l.store(body)
		}
		var pending struct {
			Error string `json:"error"`
		}
		if status == http.StatusBadRequest && json.Unmarshal(body, &pending) == nil {
			switch pending.Error {
			case "authorization_pending":
				if l.now().After(deadline) {
					return nil, errors.New("the sign-in code expired before it was used; run `caddy modelgate login` again")
				}
				continue
			case "slow_down":
				interval += 5 * time.Second
				continue
			}
		}
		return nil, answerError(status, body)
	}
}

func (l *Login) store(body []byte) (*Stored, error) {
	var k adminapi.PersonKey
	if err := json.Unmarshal(body, &k); err != nil || k.Key == "" {
		return nil, errors.New("the gateway's key answer is not understood")
	}
	exp, err := time.Parse(time.RFC3339, k.ExpiresAt)
	if err != nil {
		return nil, errors.New("the gateway's key answer has no expiry")
	}
	s := &Stored{Gateway: strings.TrimRight(l.Gateway, "/"), Key: k.Key, KeyID: k.KeyID, ExpiresAt: exp, ObtainedAt: l.now().UTC(),
		RefreshToken: k.RefreshToken, ID: k.ID, Role: k.Role, WorkspaceID: k.WorkspaceID, Models: k.Models}
	if err := l.keepCA(s); err != nil {
		return nil, err
	}
	return s, l.save(s)
}

// keepCA copies the CA certificate the login used beside the login file
// (a renewal, which uses that copy, rewrites it in place), with a bundle
// of the system's roots and it, and names both in s.
func (l *Login) keepCA(s *Stored) error {
	if l.CACert == "" {
		return nil
	}
	f, err := l.file()
	if err != nil {
		return err
	}
	dir := filepath.Dir(f)
	s.CACert, s.CABundle = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "ca-bundle.pem")
	pem, err := os.ReadFile(l.CACert)
	if err != nil {
		return fmt.Errorf("--ca-cert: %v", err)
	}
	bundle := append(systemRoots(), '\n')
	bundle = append(bundle, pem...)
	for path, b := range map[string][]byte{s.CACert: pem, s.CABundle: bundle} {
		if err := writeFile(path, b); err != nil {
			return fmt.Errorf("keeping the CA certificate: %v", err)
		}
	}
	return nil
}

// systemRoots is the system's CA bundle, read from where Go on Linux and
// the BSDs looks for it; nil where there is none (macOS and Windows
// clients use the platform's store, and SSL_CERT_FILE then adds the CA).
func systemRoots() []byte {
	for _, f := range []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/ca-bundle.pem",
		"/etc/pki/tls/cacert.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", "/etc/ssl/cert.pem"} {
		if b, err := os.ReadFile(f); err == nil {
			return b
		}
	}
	return nil
}

// Key returns a valid key, renewed first when it is expired or close to
// it (the last fifth of its life, at most 5 minutes): what Claude Code's
// apiKeyHelper runs, again after a 401.
func (l *Login) Key(ctx context.Context) (string, error) {
	s, err := l.Load()
	if err != nil {
		return "", err
	}
	margin := min(5*time.Minute, s.ExpiresAt.Sub(s.ObtainedAt)/5)
	if l.now().Before(s.ExpiresAt.Add(-margin)) {
		return s.Key, nil
	}
	if s.RefreshToken == "" {
		return "", errors.New("the key expired and the identity provider gave no refresh token; run `caddy modelgate login` again")
	}
	l.Gateway = s.Gateway
	if l.CACert == "" {
		l.CACert = s.CACert
	}
	status, body, err := l.post(ctx, "/auth/oidc/token", map[string]string{"refresh_token": s.RefreshToken})
	if err != nil {
		return "", err
	}
	if status != http.StatusOK {
		return "", answerError(status, body)
	}
	ns, err := l.store(body)
	if err != nil {
		return "", err
	}
	return ns.Key, nil
}

// Env is what `caddy modelgate env` prints: the settings Claude Code,
// Codex, Gemini CLI, opencode and the SDKs need to use the gateway with
// the person's key, as shell lines.
func Env(s *Stored, self string) string {
	g := s.Gateway
	var b strings.Builder
	fmt.Fprintf(&b, "# Signed in to %s as %s (role %s); this key expires at %s.\n", g, s.ID, s.Role, s.ExpiresAt.Local().Format(time.RFC3339))
	if s.CACert != "" {
		// Node (Claude Code, Codex, Gemini CLI, opencode, the JS SDKs)
		// adds this CA to its own roots; Go and OpenSSL clients on Linux
		// replace theirs with SSL_CERT_FILE, hence the bundle.
		fmt.Fprintf(&b, "# The gateway's certificate comes from a private CA, kept with this login: Node clients add it,\n")
		fmt.Fprintf(&b, "export NODE_EXTRA_CA_CERTS=%s\n", s.CACert)
		fmt.Fprintf(&b, "# and Go and OpenSSL clients read the system's roots with it from\n")
		fmt.Fprintf(&b, "export SSL_CERT_FILE=%s\n", s.CABundle)
	}
	fmt.Fprintf(&b, "# Claude Code: in ~/.claude/settings.json set \"apiKeyHelper\": \"%s modelgate login --print-key\", and\n", self)
	fmt.Fprintf(&b, "export ANTHROPIC_BASE_URL=%s\n", g)
	fmt.Fprintf(&b, "# Codex (env_key = \"MODELGATE_API_KEY\", base_url = \"%s/v1\"), opencode, the OpenAI and AI SDKs\n", g)
	fmt.Fprintf(&b, "export MODELGATE_API_KEY=%s\n", s.Key)
	fmt.Fprintf(&b, "export OPENAI_BASE_URL=%s/v1\n", g)
	fmt.Fprintf(&b, "export OPENAI_API_KEY=%s\n", s.Key)
	b.WriteString("# Gemini CLI and the Google Gen AI SDKs\n")
	fmt.Fprintf(&b, "export GOOGLE_GEMINI_BASE_URL=%s\n", g)
	fmt.Fprintf(&b, "export GEMINI_API_KEY=%s\n", s.Key)
	// Not exported: Claude Code would take it over its apiKeyHelper and
	// keep using the key after it expires.
	b.WriteString("# The Anthropic SDKs: ANTHROPIC_API_KEY=$MODELGATE_API_KEY (not for Claude Code, which renews through apiKeyHelper)\n")
	return b.String()
}

// runBrowser signs in through the gateway's browser sign-in, which ends
// at a listener on 127.0.0.1; the sign-in it hands over is redeemed with
// a PKCE verifier only this process knows.
func (l *Login) runBrowser(ctx context.Context) (*Stored, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening on loopback for the browser sign-in: %v", err)
	}
	defer ln.Close()
	verifier := oauth2.GenerateVerifier()
	got := make(chan string, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		code := r.URL.Query().Get("cli_code")
		if r.URL.Path != "/callback" || code == "" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "Signed in to Modelgate; you can close this tab and return to the terminal.")
		select {
		case got <- code:
		default:
		}
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	link := fmt.Sprintf("%s/auth/oidc/login?cli_port=%d&cli_challenge=%s", strings.TrimRight(l.Gateway, "/"),
		ln.Addr().(*net.TCPAddr).Port, oauth2.S256ChallengeFromVerifier(verifier))
	prompt := l.Prompt
	if prompt == nil {
		prompt = io.Discard
	}
	fmt.Fprintf(prompt, "To sign in, open this link in a browser on this machine: %s\n", link)
	if !l.NoOpen {
		openBrowser(link)
	}
	var code string
	select {
	case <-ctx.Done():
		return nil, errors.New("no sign-in arrived from the browser in time; run `caddy modelgate login` again")
	case code = <-got:
	}
	status, body, err := l.post(ctx, "/auth/oidc/token", map[string]string{"cli_code": code, "code_verifier": verifier})
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, answerError(status, body)
	}
	return l.store(body)
}

// openBrowser asks the desktop to open link, best effort: the link is
// printed too.
func openBrowser(link string) {
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.Command("open", link)
	case "windows":
		cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", link)
	default:
		cmd = exec.Command("xdg-open", link)
	}
	if cmd.Start() == nil {
		go func() { _ = cmd.Wait() }()
	}
}
